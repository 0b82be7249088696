"""Tool-integrated reasoning: RL with a tool in the loop for what the model cannot compute
in its head (ToRA, Gou et al. 2023, arXiv 2309.17452; ReTool, arXiv 2504.11536; SimpleTIR,
Xue et al. 2025, arXiv 2509.02479, whose released settings conf/recipe/tir.yaml follows).

The model writes `<calculator>expression</calculator>` (the default tool: an AST evaluator
that executes nothing, tools/calculator.py) or, opt-in, code for the sandboxed `python`
tool; the engine's tool rollout runs it and appends the result, masked out of the loss as
SimpleTIR's `mask_tool_output` does. The reward is GRPO's answer accuracy, read from the
model's own text only, so a result the tool printed earns nothing until the model writes it
as its answer.

The tool belongs to the rollout config, which a recipe's YAML cannot set, so `validate`
asks for it in one line. The CPU toy is `rlrecipes train experiment=tir_toy`: with
synthetic data the recipe trains on big arithmetic (data/bigarith.py: four-digit products
with the `<answer>` format), and the toy model is warm-started on a teacher that calls the
calculator only some of the time.

SimpleTIR's void-turn masking (a trajectory with a turn that neither completes a tool call
nor answers gets no gradient) is the rollout option `rollout.void_turn_masking`
(tool_loop/rollout.py); `experiment=simpletir_qwen2_5_7b_base` is its paper's 7B run:
fenced Python in the sandbox, `\\boxed{}` answers (`rollout.answer_mark`), 4 code turns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from omegaconf import OmegaConf

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.data.bigarith import bigarith_task
from rlrecipes.data.problems import ProblemSet
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe

BIGARITH_VERSION = 1  # bump when the task or its teacher changes (the toy's cache key)
TOOLS = ("calculator", "python")
TOY = "rlrecipes train experiment=tir_toy"


@dataclass
class TIRConfig(RecipeConfig):
    name: str = "tir"


@register_recipe
class TIR(Recipe):
    name = "tir"
    paper = "Tool-integrated reasoning: ToRA (2023), ReTool (2025), SimpleTIR (Xue et al., 2025, arXiv 2509.02479)"
    idea = "Call a calculator (or sandboxed Python) mid-answer for what the model cannot compute; results masked"
    config_cls = TIRConfig
    progress_keys = ("tools/calls_per_rollout", "tools/error_rate", "tools/answer_rate")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        tools = list(cfg.rollout.tools or [])
        if not set(tools) & set(TOOLS):
            raise ConfigError(
                f"recipe=tir trains a model to compute with a tool but rollout.tools={tools}; set "
                f"rollout.tools=[calculator] (or [python], sandboxed), or run the CPU toy: {TOY}"
            )
        if cfg.data.source == "synthetic":
            calculator = dict(cfg.rollout.get("tool_kwargs", {}).get("calculator") or {})
            changed = sorted(set(calculator) & {"open", "close", "wrap"})
            if "calculator" not in tools or changed or cfg.rollout.answer_close != "</answer>":
                raise ConfigError(
                    "with synthetic data recipe=tir trains on big arithmetic, whose toy was taught the calculator's "
                    f"own tags and <answer>...</answer>: use rollout.tools=[calculator] with its default tags ({TOY})"
                )

    def problem_set(self, data_cfg: Any) -> ProblemSet | None:
        """With synthetic data, big arithmetic over `data.synthetic` (operations, operand_max)."""
        if data_cfg.source != "synthetic":
            return None
        from rlrecipes.tool_loop.greedy import tool_warm_start

        s = data_cfg.synthetic
        task = bigarith_task(s.operations, list(s.operand_max), s.num_train, s.num_eval, s.seed, s.teacher_error_rate)
        task = replace(task, warm_start=tool_warm_start)
        train = task.train[: data_cfg.max_examples] if data_cfg.max_examples else task.train
        held_out = task.eval[: data_cfg.max_eval_examples] if data_cfg.max_eval_examples else task.eval
        report = f"{len(train)} train / {len(held_out)} held-out big-arithmetic problems (disjoint)"
        return ProblemSet(train, held_out, task.verify, task, report)

    def warm_start_key(self, data_cfg: Any) -> Any:
        synthetic = OmegaConf.to_container(data_cfg.synthetic, resolve=True)
        return OmegaConf.create({**synthetic, "tool_task": "bigarith", "bigarith_version": BIGARITH_VERSION})

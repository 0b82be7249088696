"""The tool rollout inside RecipeGRPOTrainer: settings checked before anything loads, TRL's
loss mask zero on tool tokens, rewards read the model's text only, metrics logged, and a
tiny `train` run with tools on."""

from __future__ import annotations

import json

import pytest

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError
from tests.conftest import compose


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["rollout.tools=[serch]"], "unknown tool 'serch' (rollout.tools); valid: calculator, python, search"),
        (["rollout.tools=[calculator]", "rollout.max_turns=0"], "rollout.max_turns=0 must be at least 1"),
        (
            ["rollout.tools=[calculator]", "rollout.max_tool_result_tokens=0"],
            "rollout.max_tool_result_tokens=0 must be at least 1",
        ),
        (["rollout.tools=[calculator]", "rollout.tool_timeout_s=0"], "rollout.tool_timeout_s=0.0 must be positive"),
        (["rollout.tools=[search]"], "tool search with retriever=bm25 needs rollout.tool_kwargs.search.corpus"),
        (
            ["rollout.tools=[search]", "+rollout.tool_kwargs.search.corpus=/nonexistent.jsonl"],
            "rollout.tool_kwargs.search.corpus=/nonexistent.jsonl: no such file",
        ),
        (
            ["rollout.tools=[calculator]", "+rollout.tool_kwargs.calculator.digits=3"],
            "rollout.tool_kwargs.calculator.digits is not a setting of tool 'calculator'; valid: open, close",
        ),
        (
            ["+rollout.tool_kwargs.calculator.max_digits=3"],
            "rollout.tool_kwargs.calculator is set but rollout.tools is empty",
        ),
        (
            ["rollout.tools=[calculator]", "+rollout.tool_kwargs.calculator.wrap=plain"],
            "rollout.tool_kwargs.calculator.wrap='plain' has no {} for the result",
        ),
    ],
)
def test_tool_settings_are_checked_before_anything_loads(overrides, message):
    from rlrecipes.training.plan import check_run

    with pytest.raises(ConfigError) as caught:
        check_run(compose(*overrides), hardware=False)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def _trainer(toy_model_dir, tmp_path, rollout, hooks=()):
    from datasets import Dataset

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.engine.trainer import RecipeGRPOTrainer
    from rlrecipes.models import load_model
    from rlrecipes.rewards import RewardContext, build_reward

    cfg = compose("trainer.max_steps=1", "trainer.max_completion_length=64")
    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(toy_model_dir), cfg.model)
    rows = [
        {"prompt": render_prompt(it["problem"], "chat", tok), "answer": it["answer"], "id": it["id"]}
        for it in problems.train[:16]
    ]
    accuracy = build_reward("accuracy", RewardContext(verify=problems.verify))
    trainer = RecipeGRPOTrainer(
        model=model,
        reward_funcs=[accuracy],
        args=build_grpo_config(cfg, tmp_path, {}, [1.0]),
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        hooks=list(hooks),
        rollout_func=rollout(tok),
    )
    return trainer, tok, {row["prompt"]: row["answer"] for row in rows}


class Capture(EngineHook):
    """An engine hook that keeps TRL's scored batch."""

    def __init__(self):
        self.batches = []

    def after_scoring(self, trainer, batch, rewards):
        self.batches.append(batch)
        return batch


@pytest.mark.integration
def test_scripted_tool_rollout_through_the_trainer(toy_model_dir, tmp_path):
    """Every rollout searches for its own gold answer and the tool echoes it as an answer line:
    the full completion text holds the right answer, the model's text does not, so the
    accuracy reward is 0 for all; TRL's loss mask is 0 on exactly the tool's tokens."""
    from rlrecipes.tool_loop.rollout import ToolRollout, ToolRolloutSettings
    from rlrecipes.tools import ToolSpec

    echo = ToolSpec("search", "<search>", "</search>", "<information>{}</information>", lambda q: f"\nAnswer: {q}\n")
    settings = ToolRolloutSettings(max_turns=1, max_completion_tokens=64, max_result_tokens=30)
    capture = Capture()
    trainer, tok, gold = _trainer(toy_model_dir, tmp_path, lambda tok: ToolRollout([echo], settings, tok), [capture])
    calls = []

    def scripted(prompt_ids, images, multimodal, num_generations):
        calls.append(len(prompt_ids))
        out = []
        for ids in prompt_ids:
            text = tok.decode(ids)
            if text in gold:  # turn 1: the prompt alone
                out.append(tok.encode(f"<search>{gold[text]}</search>", add_special_tokens=False))
            else:  # the final turn: the model stops
                out.append([tok.eos_token_id])
        return out, None

    trainer._generate_single_turn = scripted
    trainer.train()

    assert calls == [16, 16]  # 4 prompts x 4 completions, two turns
    assert trainer.last_rewards.shape == (16, 1) and float(trainer.last_rewards.sum()) == 0.0
    [batch] = capture.batches
    for ids, mask, completion in zip(batch["completion_ids"], batch["tool_mask"], batch["completion_mask"]):
        n = int(completion.sum())
        ids, mask = ids[:n].tolist(), mask[:n].tolist()
        text = tok.decode(ids, skip_special_tokens=True)
        model_part = text[: text.index("</search>") + len("</search>")]
        tool_part = text[len(model_part) :]
        assert tool_part.startswith("<information>\nAnswer: ") and tool_part.endswith("</information>")
        # one token per character: the model's tokens, the tool's (mask 0), then the EOS
        assert mask == [1] * len(model_part) + [0] * len(tool_part) + [1]
    [metrics] = [log for log in trainer.state.log_history if "tools/turns" in log]
    assert metrics["tools/calls_per_rollout"] == 1.0
    assert metrics["tools/turns"] == 2.0
    assert metrics["tools/answer_rate"] == 0.0
    assert metrics["tools/error_rate"] == 0.0
    assert metrics["tools/invalid_action_rate"] == 0.5  # the final turn ended without an answer


@pytest.mark.integration
def test_tiny_run_with_two_tools_logs_the_tool_metrics_exactly(tmp_path):
    """Two steps of `train` on the default recipe with both the search and the calculator tool on,
    on a scripted policy (tests/recipes/test_tool_recipes.py's search script: whether a
    built toy calls a tool is a chance outcome of its build): the metrics are the script's."""
    from rlrecipes.training.job import train
    from tests.recipes.test_tool_recipes import ROLLOUT_TOKENS, TOOL_KEYS, scripted_tool_case

    problems, model, overrides = scripted_tool_case("search_r1_toy", tmp_path)
    data = tmp_path / "problems.jsonl"
    data.write_text("".join(json.dumps({"problem": p, "answer": a}) + "\n" for p, a in problems))
    cfg = compose(
        "rollout.tools=[search,calculator]",
        f"model.name_or_path={model}",
        "data.source=file",
        f"data.path={data}",
        f"data.eval_path={data}",
        "data.template=plain",
        "trainer.num_generations=4",
        "trainer.prompts_per_rollout=4",
        "trainer.max_completion_length=96",  # the call, the passage and the answer: 63 tokens
        *(f"+{o}" if o.startswith("rollout.tool_kwargs") else o for o in overrides),
    )
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "tools/turns" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    # each step: the four problems 4 times; g and m search (8 rollouts, 2 turns each),
    # h answers at once, k's void turn ends its rollout: 24 turns over 16 rollouts
    called, tool, at_once, void = ROLLOUT_TOKENS["search_r1_toy"]
    expected = {
        "tools/calls_per_rollout": 8 / 16,
        "tools/error_rate": 0 / 8,
        "tools/invalid_action_rate": 4 / 24,
        "tools/turns": 24 / 16,
        "tools/answer_rate": 12 / 16,
        "tools/tool_token_share": 8 * tool / (8 * called + 4 * at_once + 4 * void),
    }
    for r in steps:
        assert {key: r[key] for key in TOOL_KEYS} == expected


@pytest.mark.e2e
def test_two_processes_make_the_same_generate_calls(tmp_path):
    """Rank 0's rollouts take two turns, rank 1's one: rank 1 still joins rank 0's second
    `generate` call with as many (padding) rows, as vLLM server mode's gather requires."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tests.conftest import TINY
    from tests.helpers.processes import accelerate_launcher
    from tests.test_train_multiprocess import ROOT

    entry = str(Path(__file__).parents[1] / "helpers" / "tool_multiprocess_entry.py")
    launcher = accelerate_launcher(2)
    overrides = ["trainer.max_steps=1", "trainer.max_completion_length=64", "trainer.eval.before=false"]
    overrides += ["trainer.eval.after=false"]
    overrides += ["rollout.tools=[calculator]", f"run_dir={tmp_path / 'run'}"]
    overrides += ["trainer.preflight=false"]  # the scripted rollouts never answer: the pre-flight would refuse
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": str(ROOT),
        "RLRECIPES_TOOL_CALLS": str(tmp_path),
    }
    command = [sys.executable, *launcher, entry, "train", *TINY, *overrides]
    out = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    calls = {rank: (tmp_path / f"calls-{rank}.txt").read_text().split() for rank in (0, 1)}
    # 4 prompts x 4 completions over 2 processes: 8 rows each; rank 0's 8 rows need a second turn
    assert calls == {0: ["8", "8"], 1: ["8", "8"]}
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    [step] = [r for r in rows if "tools/turns" in r]
    assert step["tools/calls_per_rollout"] == 0.5 and step["tools/turns"] == 1.5  # summed over both ranks

"""Greedy decoding through the tool loop: how a tool-using model is measured.

The same `ToolRollout` that samples RL rollouts (tool_rollout.py) runs here with greedy
transformers generation, so held-out accuracy during training (`HeldOutAccuracy`) and the
toy's warm-start dev accuracy see every tool call really run and score only what the model
wrote (`model_text`); a model that writes its own `<information>` is not credited for it.
A turn in which tools run stops at the first closing tag (transformers' stop strings; the
final turn, without tools, only at the answer's), and the rollout keeps the tokens up to it,
as it does for sampled ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

import torch
from transformers import GenerationConfig

from rlrecipes.errors import UserError
from rlrecipes.generation import Completion, eos_ids
from rlrecipes.models.toy_tools import warm_start_on_segments
from rlrecipes.tool_loop.build import retrieve_once, tool_rollout_for
from rlrecipes.tool_loop.rollout import Generate, Sync, ToolRollout, ToolRolloutSettings, Trajectory, rollout_stats


def greedy_generate(model: Any, tokenizer: Any, stops: Sequence[Sequence[str]]) -> Generate:
    """A `Generate` for one `ToolRollout.run`, which calls it once per turn: greedy transformers
    `generate` on left-padded prompts, the n-th call stopping at the strings `stops[n]` (the
    last entry for any later call) as well as at EOS."""
    eos = eos_ids(model, tokenizer)
    pad = tokenizer.pad_token_id
    calls = []

    @torch.no_grad()
    def generate(prompt_ids: list[list[int]], max_new_tokens: int) -> tuple[list[list[int]], None]:
        stop = list(stops[min(len(calls), len(stops) - 1)])
        calls.append(len(prompt_ids))
        width = max(map(len, prompt_ids))
        device = next(model.parameters()).device
        ids = torch.tensor([[pad] * (width - len(p)) + list(p) for p in prompt_ids], device=device)
        attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompt_ids], device=device)
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=pad,
            eos_token_id=eos,
            repetition_penalty=1.0,
            stop_strings=stop or None,
        )
        config.temperature = config.top_p = config.top_k = None
        was_training = model.training
        model.eval()
        out = model.generate(
            input_ids=ids, attention_mask=attn, generation_config=config, tokenizer=tokenizer if stop else None
        )
        model.train(was_training)
        return out[:, width:].tolist(), None  # padding only follows a row's EOS or stop tag: cut there

    return generate


def greedy_tool_texts(
    model: Any,
    tokenizer: Any,
    rollout: ToolRollout,
    prompts: Sequence[str],
    batch_size: int = 64,
    sync: Sync | None = None,
) -> list[str]:
    """Each prompt's greedy completion through the tool loop: the model's own text only.
    With `sync` (several processes) every process must pass as many prompts."""
    return [rollout.model_text(row) for row in greedy_tool_rows(model, tokenizer, rollout, prompts, batch_size, sync)]


def greedy_tool_rows(
    model: Any,
    tokenizer: Any,
    rollout: ToolRollout,
    prompts: Sequence[str],
    batch_size: int = 64,
    sync: Sync | None = None,
) -> list[Trajectory]:
    """`greedy_tool_texts`' rollouts themselves (tokens, who wrote them, tool calls)."""
    rollout.eos_ids |= set(eos_ids(model, tokenizer))
    answer = [rollout.settings.answer_close]
    # a markdown fence's "```" also opens the call: stopping there would end every call at its
    # start, so such a turn runs on and the loop cuts it at the closing fence in token space
    closes = [tool.close for tool in rollout.tools if tool.close not in tool.open]
    stops = [closes + answer] * rollout.settings.max_turns + [answer]
    rows: list[Trajectory] = []
    for start in range(0, len(prompts), batch_size):
        chunk = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts[start : start + batch_size]]
        rows += rollout.run(chunk, greedy_generate(model, tokenizer, stops), sync)
    return rows


def greedy_tool_accuracy(
    model: Any,
    tokenizer: Any,
    rollout: ToolRollout,
    prompts: Sequence[str],
    answers: Sequence[Any],
    verify: Callable[[str, Any], bool],
    batch_size: int = 64,
) -> float:
    """Share of `prompts` whose greedy tool-loop completion `verify` accepts."""
    if not prompts:
        return float("nan")
    texts = greedy_tool_texts(model, tokenizer, rollout, prompts, batch_size)
    return sum(bool(verify(text, gold)) for text, gold in zip(texts, answers)) / len(prompts)


def tool_warm_start(model: Any, tokenizer: Any, task: Any, cfg: Any, log: Callable[[str], None] = print) -> dict:
    """The toy's warm-start for a `ToolTask` (`task.warm_start`): SFT on the teacher's model
    segments, dev accuracy through the task's tools with `cfg.sft_max_new_tokens` tokens
    (model and tool tokens together) and the turns a correct solution needs."""
    settings = ToolRolloutSettings(max_turns=task.max_turns, max_completion_tokens=cfg.sft_max_new_tokens)
    rollout = ToolRollout(task.tools, settings, tokenizer)

    def dev_accuracy(prompts: Sequence[str], answers: Sequence[Any]) -> float:
        return greedy_tool_accuracy(model, tokenizer, rollout, prompts, answers, task.verify)

    return warm_start_on_segments(model, tokenizer, task, cfg, dev_accuracy, log)


class ToolEvalBackend:
    """`rlrecipes eval` with `rollout.tools`: each benchmark problem runs through the tool loop
    (greedy, transformers), and its completion is the model's own text, so benchmark numbers
    are measured with the tools as held-out accuracy is. With `rollout.tool_mode=rag_once`,
    `retrieve` puts the tool's result for the question after each prompt (the eval runner
    calls it, as it has the questions)."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, rollout: ToolRollout, retrieve: Any, batch_size: int = 64):
        self.model, self.tokenizer, self.rollout, self.retrieve = model, tokenizer, rollout, retrieve
        self.batch_size = max(1, batch_size)

    def chunk_size(self, sampling: Any) -> int:
        return self.batch_size

    def generate(self, prompts: Sequence[str], sampling: Any, seeds: Sequence[int], on_progress: Any = None) -> list:
        if sampling.n != 1 or not sampling.greedy:
            raise UserError(
                f"rollout.tools: the tool loop decodes greedily, one completion per problem; this protocol asks for "
                f"{sampling.n} at temperature {sampling.temperature:g} (use protocol=default)"
            )
        budget = replace(self.rollout.settings, max_completion_tokens=sampling.max_new_tokens)
        rollout = ToolRollout(self.rollout.tools, budget, self.tokenizer)
        rows = greedy_tool_rows(self.model, self.tokenizer, rollout, list(prompts), self.batch_size)
        finished = [row.answered or bool(row.ids and row.ids[-1] in rollout.eos_ids) for row in rows]
        return [
            [Completion(rollout.model_text(row), len(row.ids), "stop" if done else "length", rollout_stats([row]))]
            for row, done in zip(rows, finished)
        ]


def with_tools(backend: Any, rollout_cfg: Any) -> Any:
    """`backend` driving the tool loop when the eval config names tools (`rollout.tools`),
    else `backend` itself. Only transformers generation runs the loop."""
    if not list(rollout_cfg.get("tools") or []):
        return backend
    model, tokenizer = getattr(backend, "model", None), getattr(backend, "tokenizer", None)
    if model is None:
        raise UserError(
            "rollout.tools in rlrecipes eval runs the tool loop with transformers: set generation.backend=hf"
        )
    rollout = tool_rollout_for(rollout_cfg, tokenizer, 1)  # the budget: each benchmark's max_new_tokens
    return ToolEvalBackend(model, tokenizer, rollout, retrieve_once(rollout_cfg, tokenizer), backend.batch_size)

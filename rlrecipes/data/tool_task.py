"""Synthetic tasks whose answers need a tool (the CPU toys of the tool recipes).

A `ToolTask` is a `SyntheticTask` whose teacher demonstrations call tools: each is a list
of segments, the model's own text and the tools' results, rendered exactly as the tool
rollout (`rlrecipes/tool_loop/rollout.py`) appends them. The toy's warm-start trains on
the model's segments only (`rlrecipes/models/toy_tools.py`), so it learns to call the tool
and read its result, never to write a result itself. Answers are `<answer>...</answer>`
blocks, scored by exact match on the last one (`rlrecipes.grading.exact_match`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from rlrecipes.data.task import SyntheticTask
from rlrecipes.grading.exact_match import exact_match
from rlrecipes.tools import ToolSpec, call_tool

Segment = tuple[str, bool]  # (text, written by the model); False: a tool's result


@dataclass
class ToolTask(SyntheticTask):
    tools: list[ToolSpec]  # the tools the teacher calls, as the rollout will run them
    max_turns: int  # tool turns a correct solution needs
    segments: Callable[[dict[str, Any], random.Random], list[Segment]]  # the (flawed) teacher
    # the toy's warm-start through the tool loop (set above the data layer, where the loop lives)
    warm_start: Callable[..., dict[str, Any]] | None = None


def tool_task(
    name: str,
    train: list[dict[str, Any]],
    held_out: list[dict[str, Any]],
    tools: list[ToolSpec],
    max_turns: int,
    teacher: Callable[[dict[str, Any], random.Random], list[Segment]],
    solution: Callable[[dict[str, Any]], list[Segment]],
) -> ToolTask:
    """A ToolTask whose verifier is exact match on the last answer block."""
    return ToolTask(
        name=name,
        train=train,
        eval=held_out,
        verify=lambda completion, gold: exact_match(completion, gold),
        demonstration=lambda it, rng: "".join(text for text, _ in teacher(it, rng)),
        solution=lambda it: "".join(text for text, _ in solution(it)),
        tools=tools,
        max_turns=max_turns,
        segments=teacher,
    )


def called(tool: ToolSpec, query: str, timeout_s: float = 10.0) -> list[Segment]:
    """The model's call of `tool` on `query` and the tool's wrapped result, as two segments."""
    result = call_tool(tool, query, timeout_s)
    before, _, after = tool.wrap.partition("{}")
    return [(f"{tool.open}{query}{tool.close}", True), (f"{before}{result.text}{after}", False)]


def answered(text: str) -> Segment:
    return (f"<answer>{text}</answer>", True)

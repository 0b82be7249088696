"""Countdown's reward as TinyZero and Cognitive Behaviors score it (kanishkg/cognitive-behaviors
at 9c90d33, verl/utils/reward_score/countdown.py l.59-111): 1.0 for an equation in the last
line's last <answer>...</answer> that uses each given number exactly once and equals the
target, 0.1 (the format score) for any other equation there, 0 for none.

The numbers and the target are read from the prompt in the authors' wording ("Using the
numbers [a, b, c], create an equation that equals T", examples/data_preprocess/countdown.py
l.60), so the reward needs no answer column. The authors `eval` the equation behind a
character filter; here it is parsed (numbers, + - * /, parentheses) and never executed
(rlrecipes/arithmetic.py), in floats.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rlrecipes.arithmetic import NotEvaluated, Numbers, evaluate_arithmetic
from rlrecipes.rewards import RewardContext, RewardFn, register_reward

PROBLEM = re.compile(r"numbers\s*\[([-\d,\s]+)\],?\s*create an equation that equals\s*(-?\d+)")
ANSWER = re.compile(r"<answer>(.*?)</answer>")
COUNTDOWN_OPERATORS = ("+", "-", "*", "/")


def countdown_problem(prompt: str) -> tuple[list[int], int] | None:
    """(numbers, target) of a prompt in the authors' wording; None when it has none."""
    found = PROBLEM.findall(prompt)
    if not found:
        return None
    numbers, target = found[-1]
    return [int(n) for n in numbers.split(",") if n.strip()], int(target)


def final_equation(completion: str) -> str | None:
    """The last <answer> of the completion's last line (the authors' extract_solution, l.16-25)."""
    found = ANSWER.findall(completion.split("\n")[-1])
    return found[-1].strip() if found else None


def evaluate_equation(text: str) -> float | None:
    """The value of an arithmetic expression of numbers, + - * / and parentheses, computed in
    floats; None for anything else (or a division by zero)."""
    if not re.fullmatch(r"[\d+\-*/().\s]+", text):  # also keeps out what Python reads as numbers: 0x10, 1e3, 1_0
        return None
    try:
        return evaluate_arithmetic(
            text,
            numbers=Numbers.float,
            operators=COUNTDOWN_OPERATORS,
            max_digits=None,
            max_exponent=None,
            max_length=None,
        )
    except (NotEvaluated, ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class CountdownParams:
    # the authors' compute_score(format_score=0.1) (verl/utils/reward_score/countdown.py l.59):
    # what an equation earns that is not the answer; options: {format_score: 0} turns it off
    format_score: float = 0.1


def countdown_score(completion: str, numbers: list[int], target: int, format_score: float) -> float:
    equation = final_equation(completion)
    if equation is None:
        return 0.0
    if sorted(int(n) for n in re.findall(r"\d+", equation)) != sorted(numbers):
        return format_score
    value = evaluate_equation(equation)
    return 1.0 if value is not None and abs(value - target) < 1e-5 else format_score


@register_reward("countdown", needs_answer=False, params=CountdownParams)
def _countdown(ctx: RewardContext) -> RewardFn:
    format_score = float(ctx.params.format_score)

    def reward(prompts: list, completions: list[str], **kw: Any) -> list[float | None]:
        out: list[float | None] = []
        for prompt, completion in zip(prompts, completions):
            text = prompt if isinstance(prompt, str) else " ".join(m["content"] for m in prompt)
            problem = countdown_problem(text)
            out.append(None if problem is None else countdown_score(completion, *problem, format_score))
        return out

    return reward

"""Toy Countdown solution traces for priming, and the rule-based reader of their behaviours.

Cognitive Behaviors (Gandhi et al., arXiv 2503.01307) primes a model by SFT on Countdown
solutions written by a stronger model that show four behaviours — verification,
backtracking, subgoal setting, backward chaining — and counts those behaviours in the RL
rollouts with an LLM classifier (their `behavioral_evals/`). For the toy model both sides
use one small line grammar instead, so traces can be written without a teacher and
counted without a judge:

    from 17: 17-2=15        backward chaining: undo the last step from the target
    need 15 from 3 5        subgoal setting: an intermediate target from some numbers
    try 3+5=8 no            verification (`= value` then a verdict `ok`/`no`) of an attempt;
    try 3*5=15 ok           backtracking: a rejected attempt followed by another attempt
    Answer: (3*5)+2

Kinds (priming conditions of a CPU analogue of the paper's): `search` — every behaviour,
ending in the correct answer; `search_wrong` — the same behaviours ending in a wrong answer
(the paper's "incorrect solutions, correct behaviours" set). The task's own solutions (the
answer line alone, no visible search) are the third condition, and no priming the fourth.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from rlrecipes.data.synthetic import evaluate
from rlrecipes.errors import UserError

KINDS = ("search", "search_wrong")
BEHAVIOURS = ("verification", "backtracking", "subgoal_setting", "backward_chaining")
_PATTERNS = {
    "verification": re.compile(r"=\s*-?\d+\s+(ok|no)\b"),
    "backtracking": re.compile(r"\bno\b[^\n]*\n\s*try\b"),
    "subgoal_setting": re.compile(r"^\s*need\s+-?\d+\s+from\b", re.M),
    "backward_chaining": re.compile(r"^\s*from\s+-?\d+\s*:", re.M),
}
_UNDO = {"+": "-", "-": "+", "*": "/"}


def behaviours(text: str) -> dict[str, bool]:
    """Which of the four behaviours a completion shows, by the grammar above."""
    return {name: bool(_PATTERNS[name].search(text)) for name in BEHAVIOURS}


@dataclass(frozen=True)
class SearchCheck:
    """Whether a completion's search holds up, line by line (`check_search`)."""

    steps: int  # `from` and `try` lines
    steps_right: int  # ...whose written value is their expression's value
    verdicts: int  # `try` lines with a verdict
    verdicts_right: int  # ...saying `ok` exactly when the attempt's value is the goal of the moment
    oks: int  # `ok` verdicts
    oks_right: int  # ...for an attempt whose value is the goal (a `no` is mostly right by chance)


_FROM = re.compile(r"^\s*from\s+-?\d+\s*:\s*(.+?)=\s*(-?\d+)\s*$")
_NEED = re.compile(r"^\s*need\s+(-?\d+)\s+from\b")
_TRY = re.compile(r"^\s*try\s+(.+?)=\s*(-?\d+)\s+(ok|no)\b")
_QUOTIENT = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def _value(expr: str) -> int | None:
    """An expression's value; `a/b` (undoing a product) only when b divides a."""
    m = _QUOTIENT.fullmatch(expr)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return a // b if b and a % b == 0 else None
    return evaluate(expr)


def check_search(text: str, target: int) -> SearchCheck:
    """Whether the search in `text` (the grammar above) is sound, not only shown: a step is
    right when its expression has the value it writes, a verdict when it says `ok` exactly for
    an attempt whose value is the goal of the moment (the target, then the latest subgoal set by
    `from` or `need`). A model can show every behaviour and still compute none of it."""
    goal, steps, steps_right, verdicts, verdicts_right, oks, oks_right = target, 0, 0, 0, 0, 0, 0
    for line in text.splitlines():
        if m := _FROM.match(line):
            steps += 1
            steps_right += _value(m.group(1)) == int(m.group(2))
            goal = int(m.group(2))
        elif m := _NEED.match(line):
            goal = int(m.group(1))
        elif m := _TRY.match(line):
            value = _value(m.group(1))
            steps += 1
            steps_right += value == int(m.group(2))
            verdicts += 1
            verdicts_right += (value == goal) == (m.group(3) == "ok")
            if m.group(3) == "ok":
                oks += 1
                oks_right += value == goal
    return SearchCheck(steps, steps_right, verdicts, verdicts_right, oks, oks_right)


def search_shares(texts: list[str], targets: list[int]) -> dict[str, float]:
    """Over completions `texts` of problems with `targets`: the shares of their steps, verdicts
    and `ok` verdicts that are right (`check_search`); a share with nothing to count is left out."""
    checks = [check_search(text, target) for text, target in zip(texts, targets)]
    shares = {}
    for name in ("steps", "verdicts", "oks"):
        count = sum(getattr(c, name) for c in checks)
        if count:
            shares[f"{name}_right"] = sum(getattr(c, f"{name}_right") for c in checks) / count
    return shares


def split_last_step(expr: str) -> tuple[str, str, int] | None:
    """A left-nested solution `(inner)op x` (or `a op x`) as (inner, op, x); None otherwise."""
    m = re.fullmatch(r"\((.+)\)([-+*])(\d+)", expr) or re.fullmatch(r"(\d+)([-+*])(\d+)", expr)
    return (m.group(1), m.group(2), int(m.group(3))) if m else None


def trace(item: dict[str, Any], kind: str, rng: random.Random, max_wrong: int = 2) -> str:
    """A toy Countdown completion of `kind` for a synthetic Countdown problem `item`."""
    if kind not in KINDS:
        raise UserError(f"priming kind {kind!r}; valid: {', '.join(KINDS)}")
    solution = item["solution_expr"]
    numbers_text, target_text = item["answer"].split("=")
    target = int(target_text)
    lines: list[str] = []
    goal, numbers, inner = target, [int(x) for x in numbers_text.split(",")], solution
    step = split_last_step(solution)
    if step is not None and "(" in solution:  # three numbers or more: one step back from the target
        inner, op, last = step
        goal = evaluate(inner)
        lines.append(f"from {target}: {target}{_UNDO[op]}{last}={goal}")
        numbers = list(numbers)
        numbers.remove(last)
        lines.append(f"need {goal} from {' '.join(map(str, numbers))}")
    for expr in _wrong_attempts(numbers, goal, rng, max_wrong):
        lines.append(f"try {expr}={evaluate(expr)} no")
    lines.append(f"try {inner}={goal} ok")
    answer = solution
    if kind == "search_wrong":  # the same search, then a wrong final answer
        wrong = _wrong_attempts([int(x) for x in numbers_text.split(",")], target, rng, 1)
        answer = wrong[0] if wrong else _break(solution)
    lines.append(f"Answer: {answer}")
    return "\n".join(lines)


def _wrong_attempts(numbers: list[int], goal: int, rng: random.Random, most: int) -> list[str]:
    """Up to `most` distinct expressions over `numbers` (each once) whose value is not `goal`."""
    seen: list[str] = []
    for _ in range(20 * most):
        shuffled = list(numbers)
        rng.shuffle(shuffled)
        expr = str(shuffled[0])
        for i, x in enumerate(shuffled[1:]):
            expr = f"{expr}{rng.choice('+-*')}{x}" if i == 0 else f"({expr}){rng.choice('+-*')}{x}"
        if evaluate(expr) != goal and expr not in seen:
            seen.append(expr)
        if len(seen) == most:
            break
    return seen


def _break(solution: str) -> str:
    """The solution with its first operator changed (its value changes for any numbers > 1)."""
    i = next(i for i, ch in enumerate(solution) if ch in "+-*")
    return solution[:i] + ("-" if solution[i] != "-" else "+") + solution[i + 1 :]

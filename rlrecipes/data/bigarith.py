"""Big arithmetic: the tool-integrated-reasoning toy, where the answer needs the calculator.

Problems such as `4817*9263` or `4817+9263` with operands drawn from [0, operand_max]
(data.synthetic: `operations`, `operand_max`, e.g. four digits), beyond what the toy model
can compute in its head (it is trained on nothing but these demonstrations). The correct
solution calls the `calculator` tool on the problem and copies its result into the answer:

    <calculator>4817*9263</calculator><result>44619871</result><answer>44619871</answer>

The warm-start's teacher uses the tool only sometimes: on a product, with probability
`error_rate`, it answers at once with an estimate (both operands rounded to hundreds), which
is wrong; sums and differences it always computes with the tool. Imitation copies both
habits, so greedy decoding computes sums right and guesses products (with `error_rate` above
one half): held-out accuracy rises, then plateaus, which is what ends the warm-start; RL with
exact match can make the tool the habit on products too. Train and held-out problems are
disjoint (a commuted pair counts as the same problem).
"""

from __future__ import annotations

import random
from typing import Any

from rlrecipes.data.tool_task import Segment, ToolTask, answered, called, tool_task
from rlrecipes.errors import UserError
from rlrecipes.tools import build_tools

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def estimate(a: int, op: str, b: int) -> int:
    """The teacher's answer without the tool: the operands rounded to hundreds; never the truth."""
    value = _OPS[op](round(a, -2), round(b, -2))
    return value + 100 if value == _OPS[op](a, b) else value


def _problems(ops: str, hi_a: int, hi_b: int, count: int, seed: int) -> list[tuple[int, str, int]]:
    rng = random.Random(seed)
    seen: set[tuple[int, str, int]] = set()
    problems = []
    for _ in range(50 * count):
        a, op, b = rng.randint(0, hi_a), rng.choice(ops), rng.randint(0, hi_b)
        if op == "-" and b > a:
            a, b = b, a
        key = (min(a, b), op, max(a, b)) if op in "+*" else (a, op, b)
        if key not in seen:
            seen.add(key)
            problems.append((a, op, b))
        if len(problems) == count:
            return problems
    raise UserError(
        f"data.synthetic asks for {count} distinct problems but operand_max={[hi_a, hi_b]} "
        "has too few; raise operand_max or lower num_train/num_eval"
    )


def bigarith_task(
    operations: str, operand_max: list[int], num_train: int, num_eval: int, seed: int, error_rate: float
) -> ToolTask:
    ops = [op for op in operations if op in _OPS]
    if not ops or len(ops) != len(operations):
        raise UserError(f"data.synthetic.operations={operations!r}; valid characters: + - *")
    if len(operand_max) != 2:
        raise UserError("data.synthetic.operand_max must list two maxima, e.g. [9999, 9999]")
    problems = _problems("".join(ops), int(operand_max[0]), int(operand_max[1]), num_train + num_eval, seed)
    [calculator] = build_tools(["calculator"])

    def item(key: tuple[int, str, int]) -> dict[str, Any]:
        a, op, b = key
        return {
            "id": f"{a}{op}{b}",
            "problem": f"{a}{op}{b}",
            "answer": str(_OPS[op](a, b)),
            "guess": estimate(a, op, b),
        }

    def solution(it: dict[str, Any]) -> list[Segment]:
        return called(calculator, it["problem"]) + [answered(it["answer"])]

    def teacher(it: dict[str, Any], rng: random.Random) -> list[Segment]:
        guesses = "*" in it["problem"] and rng.random() < error_rate
        return [answered(str(it["guess"]))] if guesses else solution(it)

    items = [item(k) for k in problems]
    return tool_task("bigarith", items[num_eval:], items[:num_eval], [calculator], 1, teacher, solution)

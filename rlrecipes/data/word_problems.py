"""Short arithmetic word problems answered in \\boxed{}: a task a small pretrained chat model
can partly do (GSM8K-style stories, Cobbe et al. 2021, cut to one or two operations).

A problem is fixed by its *key*: the story kind and its numbers, e.g. ("buy_give", 12, 7, 5)
→ "Mia has 12 marbles. She buys 7 more and then gives 5 to a friend. How many marbles does
Mia have now?" → 14. The name and the object are drawn from the key's own seeded generator,
so the same key always reads the same. Train and held-out are split by key (`synthetic._split`),
so no held-out story with its numbers is ever trained on.

`operand_max[0]` bounds every number; `num_numbers` (2 or 3) picks one-step stories (+, -, x)
or two-step ones (+ then -, x then +, x then -). Answers are never negative.

The verifier is the project's grader (`rlrecipes.grading.grade`, style auto): the last
\\boxed{...} when there is one, else the final number written, compared as a number.
SmolLM2-135M-Instruct, asked for a box, writes one in under 15% of its answers ("... The
answer is 4."): a box-only check scored it 0-2% greedy on these stories, where the numbers it
writes are right 23-29% of the time, and would leave RL almost no reward to learn from.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from rlrecipes.errors import UserError
from rlrecipes.grading import grade

INSTRUCTION = "Put your final answer within \\boxed{}."
NAMES = [("Mia", "She"), ("Sam", "He"), ("Ava", "She"), ("Leo", "He"), ("Zoe", "She"), ("Ben", "He")]
OBJECTS = ["apples", "marbles", "stickers", "pencils", "cookies", "stamps", "shells", "cards"]

# kind -> (story with {name} {pron} {obj} {a} {b} {c}, answer from the numbers)
ONE_STEP: dict[str, tuple[str, Callable[..., int]]] = {
    "buy": ("{name} has {a} {obj}. {pron} buys {b} more. How many {obj} does {name} have now?", lambda a, b: a + b),
    "give": (
        "{name} has {a} {obj}. {pron} gives {b} of them to a friend. How many {obj} does {name} have left?",
        lambda a, b: a - b,
    ),
    "boxes": (
        "{name} has {a} boxes with {b} {obj} in each box. How many {obj} does {name} have in all?",
        lambda a, b: a * b,
    ),
}
TWO_STEP: dict[str, tuple[str, Callable[..., int]]] = {
    "buy_give": (
        "{name} has {a} {obj}. {pron} buys {b} more and then gives {c} to a friend. "
        "How many {obj} does {name} have now?",
        lambda a, b, c: a + b - c,
    ),
    "boxes_buy": (
        "{name} has {a} boxes with {b} {obj} in each box, and {c} loose {obj}. How many {obj} does {name} have in all?",
        lambda a, b, c: a * b + c,
    ),
    "boxes_give": (
        "{name} has {a} boxes with {b} {obj} in each box. {pron} gives {c} {obj} away. "
        "How many {obj} does {name} have left?",
        lambda a, b, c: a * b - c,
    ),
}


def word_problem_keys(num_numbers: int, operand_max: int) -> list[tuple]:
    """Every (kind, numbers...) story with numbers in [1, operand_max] and an answer >= 0."""
    if num_numbers not in (2, 3):
        raise UserError(f"data.synthetic.num_numbers={num_numbers} for word_problems; valid: 2 (one step), 3 (two)")
    if operand_max < 2:
        raise UserError(f"data.synthetic.operand_max=[{operand_max}] for word_problems; it must be at least 2")
    kinds = ONE_STEP if num_numbers == 2 else TWO_STEP
    nums = range(1, operand_max + 1)
    keys = []
    for kind, (_, answer) in kinds.items():
        if num_numbers == 2:
            keys += [(kind, a, b) for a in nums for b in nums if answer(a, b) >= 0]
        else:
            keys += [(kind, a, b, c) for a in nums for b in nums for c in nums if answer(a, b, c) >= 0]
    return keys


def word_problem(key: tuple) -> dict[str, Any]:
    """The problem fixed by `key`: its story (with the boxed instruction) and answer."""
    kind, *numbers = key
    story, answer = {**ONE_STEP, **TWO_STEP}[kind]
    rng = random.Random("/".join(map(str, key)))  # the key alone fixes name and object
    name, pron = rng.choice(NAMES)
    values = dict(zip("abc", numbers))
    text = story.format(name=name, pron=pron, obj=rng.choice(OBJECTS), **values)
    return {
        "id": "/".join(map(str, key)),
        "problem": f"{text} {INSTRUCTION}",
        "answer": str(answer(*numbers)),
    }


def verify_answer(completion: str, gold: Any) -> bool:
    """True when the completion's final answer (its last box, else its last number) is the gold
    number (the project's grader)."""
    return grade(completion, str(gold), style="auto")


def solution(item: dict[str, Any]) -> str:
    """A correct completion: the answer, boxed (the task's SFT target)."""
    return f"The answer is \\boxed{{{item['answer']}}}."

"""Synthetic verifiable tasks generated in-process: arithmetic, Countdown, word problems and
long documents.

Each task yields problems `{"id", "problem", "answer"}` split into disjoint train and
held-out sets (split by problem identity, so no held-out problem is ever trained on),
a verifier `verify(completion, answer) -> bool`, and demonstrations from a *flawed
teacher* for the supervised warm-start of the toy model: with probability
`teacher_error_rate` the teacher makes the task's systematic mistake (arithmetic: it
forgets carries; Countdown: it writes one wrong operator). Imitation copies the flaw;
RL with the verifier can remove it, which is what the quick-start demonstrates.

Completions use the answer-line format "Answer: <answer>" (DAPO's format), so every
recipe's reward, including DAPO's, reads them the same way.
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
from typing import Any, Callable

from rlrecipes.arithmetic import NotEvaluated, Numbers, evaluate_arithmetic
from rlrecipes.choice import Choice
from rlrecipes.data import long_documents as ld
from rlrecipes.data import word_problems as wp
from rlrecipes.data.task import SyntheticTask
from rlrecipes.errors import UserError
from rlrecipes.grading.extract import answer_line


class SyntheticTaskName(Choice):  # `data.synthetic.task`: the tasks `make_task` builds
    arithmetic = "arithmetic"
    countdown = "countdown"
    word_problems = "word_problems"  # rlrecipes/data/word_problems.py
    long_documents = "long_documents"  # rlrecipes/data/long_documents.py


# graded by the answer line (SyntheticTask.answer_line_graded); the others need their own verifier
ANSWER_LINE_TASKS = (SyntheticTaskName.arithmetic, SyntheticTaskName.long_documents)


def make_task(cfg: Any) -> SyntheticTask:
    """Build the task described by a `SyntheticTaskConfig` node."""
    makers = {
        SyntheticTaskName.arithmetic: _arithmetic,
        SyntheticTaskName.countdown: _countdown,
        SyntheticTaskName.word_problems: _word_problems,
        SyntheticTaskName.long_documents: _long_documents,
    }
    if cfg.task not in makers:
        raise UserError(f"data.synthetic.task={cfg.task!r} is unknown; valid: {', '.join(makers)}")
    return dataclasses.replace(makers[cfg.task](cfg), answer_line_graded=cfg.task in ANSWER_LINE_TASKS)


def _split(keys: list[Any], cfg: Any) -> tuple[list[Any], list[Any]]:
    rng = random.Random(cfg.seed)
    keys = list(keys)
    rng.shuffle(keys)
    if cfg.num_eval + cfg.num_train > len(keys):
        raise UserError(
            f"data.synthetic asks for {cfg.num_train} train + {cfg.num_eval} eval problems "
            f"but the task has only {len(keys)} distinct ones; raise operand_max or lower the counts"
        )
    return keys[cfg.num_eval : cfg.num_eval + cfg.num_train], keys[: cfg.num_eval]


# --------------------------------------------------------------------------- arithmetic
_OPS: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}


def _no_carry(a: int, b: int, op: str) -> int:
    """The flawed teacher's result: digit-wise + or - with carries/borrows dropped."""
    if op == "*":
        return a * b + 10  # a misplaced carry
    digits, place = 0, 1
    while a or b:
        da, db = a % 10, b % 10
        d = (da + db) % 10 if op == "+" else abs(da - db)
        digits += d * place
        a, b, place = a // 10, b // 10, place * 10
    return digits


def _arithmetic(cfg: Any) -> SyntheticTask:
    ops = [op for op in cfg.operations if op in _OPS]
    if not ops or len(ops) != len(cfg.operations):
        raise UserError(f"data.synthetic.operations={cfg.operations!r}; valid characters: + - *")
    if len(cfg.operand_max) != 2:
        raise UserError("data.synthetic.operand_max must list two maxima for arithmetic, e.g. [99, 99]")
    hi_a, hi_b = (int(x) for x in cfg.operand_max)
    keys = [(a, op, b) for a in range(hi_a + 1) for b in range(hi_b + 1) for op in ops if not (op == "-" and b > a)]
    train_keys, eval_keys = _split(keys, cfg)

    def item(key: tuple[int, str, int]) -> dict[str, Any]:
        a, op, b = key
        return {
            "id": f"{a}{op}{b}",
            "problem": f"{a}{op}{b}",
            "answer": str(_OPS[op](a, b)),
            "flawed": str(_no_carry(a, b, op)),
        }

    def verify(completion: str, gold: Any) -> bool:
        pred = answer_line(completion)
        return pred is not None and pred.strip() == str(gold).strip()

    def demonstration(it: dict[str, Any], rng: random.Random) -> str:
        wrong = rng.random() < cfg.teacher_error_rate
        return f"Answer: {it['flawed'] if wrong else it['answer']}"

    return SyntheticTask(
        "arithmetic",
        [item(k) for k in train_keys],
        [item(k) for k in eval_keys],
        verify,
        demonstration,
        lambda it: f"Answer: {it['answer']}",
    )


# ------------------------------------------------------------------------ word problems
def _word_problems(cfg: Any) -> SyntheticTask:
    """Stories answered in \\boxed{} (rlrecipes/data/word_problems.py), for pretrained chat
    models; the flawed teacher is off by one on `teacher_error_rate` of its demonstrations."""

    train_keys, eval_keys = _split(wp.word_problem_keys(int(cfg.num_numbers), int(cfg.operand_max[0])), cfg)

    def demonstration(it: dict[str, Any], rng: random.Random) -> str:
        wrong = rng.random() < cfg.teacher_error_rate
        return wp.solution({"answer": int(it["answer"]) + 1}) if wrong else wp.solution(it)

    return SyntheticTask(
        "word_problems",
        [wp.word_problem(k) for k in train_keys],
        [wp.word_problem(k) for k in eval_keys],
        wp.verify_answer,
        demonstration,
        wp.solution,
    )


# ----------------------------------------------------------------------- long documents
def _long_documents(cfg: Any) -> SyntheticTask:
    """A question, then a document of its passage and distractors (rlrecipes/data/long_documents.py):
    every person of each world asked once per count in `distractors`; the training questions
    shuffled, the held-out ones in order of count."""
    counts = ld.check_counts(cfg.distractors)
    for key in ("num_train", "num_eval"):
        if cfg[key] < 3 * len(counts):
            raise UserError(
                f"data.synthetic.{key}={cfg[key]}: long_documents asks each person once per distractor count "
                f"({len(counts)}) and needs at least 3 people: give at least {3 * len(counts)}"
            )
    train_people, eval_people = ld.worlds(cfg.num_train, cfg.num_eval, counts, cfg.seed)
    train = ld.questions(train_people, counts, cfg.seed + 1)
    random.Random(cfg.seed + 2).shuffle(train)
    return SyntheticTask(
        "long_documents",
        train,
        ld.questions(eval_people, counts, cfg.seed + 3),
        ld.verify,
        ld.lazy_reader(cfg.teacher_error_rate),
        ld.solution,
    )


# ---------------------------------------------------------------------------- countdown
def _countdown(cfg: Any) -> SyntheticTask:
    n, hi = int(cfg.num_numbers), int(cfg.operand_max[0])
    if n < 2:
        raise UserError("data.synthetic.num_numbers must be at least 2 for countdown")
    rng = random.Random(cfg.seed + 1)
    keys: dict[tuple[tuple[int, ...], int], str] = {}
    pool = list(itertools.combinations_with_replacement(range(1, hi + 1), n))
    wanted = cfg.num_train + cfg.num_eval
    # Several passes: each number set reaches several targets with different expressions.
    for _ in range(24):
        rng.shuffle(pool)
        for numbers in pool:
            expr = _random_expression(list(numbers), rng)
            target = evaluate(expr)
            if target is not None and target >= 0:
                keys.setdefault((tuple(sorted(numbers)), target), expr)
            if len(keys) >= wanted:
                break
        if len(keys) >= wanted:
            break
    train_keys, eval_keys = _split(sorted(keys), cfg)

    def item(key: tuple[tuple[int, ...], int]) -> dict[str, Any]:
        numbers, target = key
        nums = ",".join(map(str, numbers))
        return {
            "id": f"{nums}->{target}",
            "problem": f"{' '.join(map(str, numbers))} -> {target}",
            "answer": f"{nums}={target}",
            "solution_expr": keys[key],
        }

    def verify(completion: str, gold: Any) -> bool:
        pred = answer_line(completion)
        nums, target = str(gold).split("=")
        return pred is not None and check_countdown(pred, [int(x) for x in nums.split(",")], int(target))

    def demonstration(it: dict[str, Any], rng_: random.Random) -> str:
        expr = it["solution_expr"]
        if rng_.random() < cfg.teacher_error_rate:
            positions = [i for i, ch in enumerate(expr) if ch in "+-*"]
            i = rng_.choice(positions)
            expr = expr[:i] + rng_.choice([op for op in "+-*" if op != expr[i]]) + expr[i + 1 :]
        return f"Answer: {expr}"

    return SyntheticTask(
        "countdown",
        [item(k) for k in train_keys],
        [item(k) for k in eval_keys],
        verify,
        demonstration,
        lambda it: f"Answer: {it['solution_expr']}",
    )


def _random_expression(numbers: list[int], rng: random.Random) -> str:
    """A left-nested expression using each number once, e.g. "(3*5)+7"."""
    rng.shuffle(numbers)
    expr = str(numbers[0])
    for i, x in enumerate(numbers[1:]):
        expr = f"{expr}{rng.choice('+-*')}{x}" if i == 0 else f"({expr}){rng.choice('+-*')}{x}"
    return expr


_TOKEN = re.compile(r"\s*(\d+|[-+*()])")


def evaluate(expr: str) -> int | None:
    """Value of an integer expression over + - * and parentheses, or None if malformed or a
    product is larger than 10**12.

    The text is read as tokens first (numbers with leading zeros or in other scripts' digits
    count, at most 64 tokens), then evaluated from Python's syntax tree by the shared
    evaluator (rlrecipes/arithmetic.py): model output is never handed to Python's eval."""
    tokens, pos = [], 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            return None
        tokens.append(m.group(1))
        pos = m.end()
    if len(tokens) > 64:
        return None
    try:
        text = " ".join(str(int(t)) if t.isdigit() else t for t in tokens)  # "007" -> "7", as Python reads it
        return evaluate_arithmetic(
            text,
            numbers=Numbers.integer,
            operators=("+", "-", "*"),
            unary=False,  # "-3" is no number of these tasks
            max_digits=None,
            max_exponent=None,
            max_length=None,
            max_product=10**12,
        )
    except (NotEvaluated, ValueError):  # ValueError: a number past Python's 4300 digits
        return None


def check_countdown(expr: str, numbers: list[int], target: int) -> bool:
    """True if `expr` uses exactly the given numbers (each once) and equals `target`."""
    used = sorted(int(x) for x in re.findall(r"\d+", expr))
    return used == sorted(numbers) and evaluate(expr) == target

"""Synthetic arithmetic preference pairs and the toy judge's warm-start task.

Pairs come from the synthetic arithmetic task's problems (train and held-out problems stay
disjoint): chosen = "Answer: <the sum>", rejected = "Answer: <a wrong sum>", the wrong sum
being the flawed teacher's no-carry result where that differs from the truth (the mistake a
policy on this task actually makes), else the truth +/- 1..10 (never negative). This is the
toy analogue of J1's MATH half (a correct vs an incorrect solution of the same problem).

The toy judge is warm-started by imitation of a flawed *judge* teacher that is
position-biased, the failure J1 trains against: with probability `teacher_error_rate` it
prefers whatever is shown first ([[A]]; pairwise_scores: A scores higher; pointwise: it rates
every response 9, so the pair ties), otherwise it judges right. Imitation copies the bias;
RL on verdict correctness can remove it.
"""

from __future__ import annotations

import random
from typing import Any

from rlrecipes.data.synthetic import SyntheticTask, make_task
from rlrecipes.judge.pairs import ROLES, Pair, judge_rows, split_row_id
from rlrecipes.judge.verdicts import verdict_verifier

HIGH, LOW = 9, 2  # the teacher's scores for a right and a wrong response


def arithmetic_pairs(items: list[dict[str, Any]], seed: int) -> list[Pair]:
    rng = random.Random(seed)
    pairs = []
    for it in items:
        truth = int(it["answer"])
        wrong = int(it["flawed"]) if it.get("flawed") not in (None, it["answer"]) else truth
        while wrong == truth or wrong < 0:
            wrong = truth + rng.choice([-1, 1]) * rng.randint(1, 10)
        pairs.append(Pair(str(it["id"]), str(it["problem"]), f"Answer: {truth}", f"Answer: {wrong}"))
    return pairs


def verdict_text(judge: str, gold: str, biased: bool) -> str:
    """The teacher's output for a row whose right answer is `gold` (A/B, or chosen/rejected)."""
    if gold in ROLES:  # a pointwise row (recipe.judge pointwise or multitask)
        return f"<score>{HIGH if biased or gold == 'chosen' else LOW}</score>"
    first_wins = biased or gold == "A"
    if judge in ("pairwise_scores", "multitask"):
        a, b = (HIGH, LOW) if first_wins else (LOW, HIGH)
        return f"<score_A>{a}</score_A><score_B>{b}</score_B>"
    return f"<answer>[[{'A' if first_wins else 'B'}]]</answer>"


def synthetic_pairs(synthetic_cfg: Any, base: SyntheticTask | None = None) -> tuple[list[Pair], list[Pair]]:
    """The (training, held-out) pairs of the arithmetic task: what recipe=j1 trains and measures
    on, and what `rlrecipes judge-pairs --data toy` writes to a file."""
    base = base or make_task(synthetic_cfg)
    return arithmetic_pairs(base.train, synthetic_cfg.seed), arithmetic_pairs(base.eval, synthetic_cfg.seed + 1)


def judge_task(synthetic_cfg: Any, judge: str, style: str) -> SyntheticTask:
    """The arithmetic task's problems as judge rows (both orders), with the biased teacher."""
    base = make_task(synthetic_cfg)
    train_pairs, held_out_pairs = synthetic_pairs(synthetic_cfg, base)
    train = judge_rows(train_pairs, judge, style)
    held_out = judge_rows(held_out_pairs, judge, style)
    error_rate = float(synthetic_cfg.teacher_error_rate)

    def demonstration(it: dict[str, Any], rng: random.Random) -> str:
        return verdict_text(judge, it["answer"], rng.random() < error_rate)

    def solution(it: dict[str, Any]) -> str:
        split_row_id(it["id"])  # a judge row, or fail loudly
        return verdict_text(judge, it["answer"], False)

    return SyntheticTask(f"judge_{base.name}", train, held_out, verdict_verifier(judge), demonstration, solution)

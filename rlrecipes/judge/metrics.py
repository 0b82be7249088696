"""Judge metrics over pairs judged in both orders (J1 §3; the paper's Tab. 2 and 5 columns).

Per pair the evaluator has judgements of order AB (chosen shown first, right answer A) and
order BA (right answer B), or, pointwise, scores of the chosen and of the rejected response.
With k sampled judgements per order the verdict of an order is the majority of the parsed
verdicts (SC@k; a tie between A and B, or no parsed verdict, is no verdict), and a pointwise
score is the mean of the parsed scores (mean-score@k).

- `accuracy`: one order per pair drawn at random (seeded): the paper's "accuracy over a
  random ordering" (PPE, RewardBench, RM-Bench); `accuracy_mean_order` is its expectation
  (the mean over both orders), free of the draw's noise;
- `consistent_accuracy`: right in both orders (JudgeBench, FollowBenchEval);
- `flip_rate`: among pairs with a verdict in both orders, the share whose preferred response
  changes when the order is swapped (same letter twice): position bias;
- `tie_rate`: judgements with equal scores (pairwise_scores), or pointwise pairs whose two
  scores are equal; `unparseable_rate`: judgements without a usable verdict or score
  (`none`, `both`, `out_of_range`), with each status counted in `statuses`;
- pointwise: a pair is right iff score(chosen) > score(rejected) (a tie is wrong), so
  `accuracy` = `consistent_accuracy` there (no order);
- `by_category`: the same per category, where the pairs have one.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from rlrecipes.judge.verdicts import STATUSES, Judgement


@dataclass
class JudgedPair:
    """One pair's judgements: `first` = order AB (or the chosen response, pointwise),
    `second` = order BA (or the rejected response); k judgements each."""

    id: str
    first: Sequence[Judgement]
    second: Sequence[Judgement]
    category: str | None = None


def majority_verdict(judgements: Sequence[Judgement]) -> str | None:
    """SC@k: the most common parsed verdict; None when none parsed or A and B tie."""
    counts = Counter(j.verdict for j in judgements if j.ok and j.verdict)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    return None if rest and rest[0][1] == n else top


def mean_score(judgements: Sequence[Judgement]) -> float | None:
    scores = [j.score for j in judgements if j.ok and j.score is not None]
    return sum(scores) / len(scores) if scores else None


def pair_outcome(pair: JudgedPair, judge: str) -> dict[str, Any]:
    """right_first, right_second (per order), consistent, flipped (None: undefined), tie."""
    if judge == "pointwise":
        c, r = mean_score(pair.first), mean_score(pair.second)
        right = c is not None and r is not None and c > r
        return {
            "right_first": right,
            "right_second": right,
            "consistent": right,
            "flipped": None,
            "tie": c is not None and c == r,
        }
    a, b = majority_verdict(pair.first), majority_verdict(pair.second)
    return {
        "right_first": a == "A",
        "right_second": b == "B",
        "consistent": a == "A" and b == "B",
        "flipped": None if a is None or b is None else a == b,
        "tie": False,
    }


def judge_metrics(pairs: Sequence[JudgedPair], judge: str, seed: int = 0) -> dict[str, Any]:
    """The metrics of the module doc, overall and by category."""
    out = _metrics(pairs, judge, seed)
    categories = sorted({p.category for p in pairs if p.category is not None})
    if categories:
        out["by_category"] = {c: _metrics([p for p in pairs if p.category == c], judge, seed) for c in categories}
    return out


def _metrics(pairs: Sequence[JudgedPair], judge: str, seed: int) -> dict[str, Any]:
    if not pairs:
        return {"pairs": 0}
    rng = random.Random(seed)
    outcomes = [pair_outcome(p, judge) for p in pairs]
    random_order = [o["right_first"] if rng.random() < 0.5 else o["right_second"] for o in outcomes]
    judgements = [j for p in pairs for j in (*p.first, *p.second)]
    statuses = Counter(j.status for j in judgements)
    decided = [o["flipped"] for o in outcomes if o["flipped"] is not None]
    n = len(pairs)
    ties = sum(o["tie"] for o in outcomes) / n if judge == "pointwise" else statuses["tie"] / len(judgements)
    return {
        "pairs": n,
        "accuracy": sum(random_order) / n,
        "accuracy_mean_order": sum(o["right_first"] + o["right_second"] for o in outcomes) / (2 * n),
        "consistent_accuracy": sum(o["consistent"] for o in outcomes) / n,
        "flip_rate": sum(decided) / len(decided) if decided else None,
        "tie_rate": ties,
        "unparseable_rate": sum(statuses[s] for s in ("none", "both", "out_of_range")) / len(judgements),
        "statuses": {s: statuses[s] for s in STATUSES},
    }

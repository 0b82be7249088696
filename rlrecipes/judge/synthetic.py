"""Synthetic arithmetic preference pairs and the toy judge's warm-start task.

Pairs come from the synthetic arithmetic task's problems (train and held-out problems stay
disjoint): chosen = "Answer: <the sum>", rejected = "Answer: <a wrong sum>". The toy analogue
of J1's MATH half (a correct vs an incorrect solution of the same problem), built so that only
a judge that checks the sum can beat chance:

- the wrong sum has the right one's length and sign and differs from it in exactly one digit
  (no carry or borrow into other digits), e.g. 125 vs 135 or 125 vs 128; where a one-digit
  change exists in both directions the changed position is drawn among those positions, so
  the flawed teacher's slip on a two-digit sum (a dropped carry: 23 -> 13) is one of them;
- whether the wrong sum is the larger one is *assigned*, not drawn: within every stratum
  (length of the sum, changed position) half the pairs get a larger wrong sum and half a
  smaller one, the odd one out alternating across strata, leading-digit strata first. Hence
  "prefer the larger number" and "prefer the larger first-written digit" are right on
  0.5 +/- 1/(2n) of n pairs for any seed, and "prefer the longer answer" ties on every pair.

`SHORTCUTS` are those surface rules as judges of a pair (bench_j1 prints them beside the
trained judges) and `question_swapped` re-shows pairs under another problem whose answer is
the wrong sum, so the gold verdict flips: a judge that reads the question follows it, a
judge that looks only at the answers keeps its verdicts and is graded 1 - its old accuracy.

The toy judge is warm-started by imitation of a flawed *judge* teacher that is
position-biased, the failure J1 trains against: with probability `teacher_error_rate` it
prefers whatever is shown first ([[A]]; pairwise_scores: A scores higher; pointwise: it rates
every response 9, so the pair ties), otherwise it judges right. Imitation copies the bias;
RL on verdict correctness can remove it.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any, Callable

from rlrecipes.data.synthetic import SyntheticTask, make_task
from rlrecipes.judge.pairs import ROLES, Pair, judge_rows, split_row_id
from rlrecipes.judge.verdicts import verdict_verifier

HIGH, LOW = 9, 2  # the teacher's scores for a right and a wrong response
PREFIX = "Answer: "
# Bump when the pairs change: the toy judge's warm-start cache key holds it (recipes/j1.py), so a
# judge warm-started on older pairs is rebuilt rather than reused.
PAIRS_VERSION = 2


def digit_options(truth: int, position: int) -> dict[int, list[int]]:
    """The one-digit changes of `truth` at `position` (0 = ones) that keep its length and
    sign, by direction of the value: {+1: larger wrong sums, -1: smaller ones}."""
    sign, digits = (-1 if truth < 0 else 1), str(abs(truth))
    index = len(digits) - 1 - position
    old = int(digits[index])
    lowest = 1 if index == 0 and len(digits) > 1 else 0  # no leading zero: the length stays
    out: dict[int, list[int]] = {1: [], -1: []}
    for new in range(lowest, 10):
        if new != old:
            value = sign * int(digits[:index] + str(new) + digits[index + 1 :])
            out[1 if value > truth else -1].append(value)
    return out


def _stratum(truth: int, rng: random.Random) -> tuple[int, tuple[int, ...]]:
    """The changed position and the directions it allows: a position that allows both when
    one exists (the direction is then free to be balanced), else a position below the leading
    digit (forced, e.g. 100 -> 10x; kept out of the leading-digit strata, which could hold
    only such items and so could not be balanced), the leading digit only for one digit."""
    positions = range(len(str(abs(truth))))
    both = [p for p in positions if all(digit_options(truth, p).values())]
    if both:
        return rng.choice(both), (1, -1)
    position = rng.choice(positions[:-1] or positions)  # every digit has 8 or 9 alternatives
    return position, tuple(d for d, values in digit_options(truth, position).items() if values)


def assign_directions(strata: list[tuple[tuple[int, int], tuple[int, ...]]], rng: random.Random) -> list[int]:
    """+1 (wrong > right) or -1 per item: forced items keep their direction, free ones are
    split so that, stratum after stratum, the running count of +1 stays at half the items.

    `strata` holds per item ((length, position), allowed directions). Leading-digit strata come
    first, so they end balanced among themselves (the first-digit rule) before the rest
    continue the count (the larger rule); a stratum with forced items (a one-digit sum of 9
    can only be undercut) is offset by the next one. Balanced to 1 item while the free items
    can absorb the forced ones, which the task's sets always allow (tests/judge)."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (key, _) in enumerate(strata):
        groups[key].append(i)
    out = [0] * len(strata)
    seen = ups = 0
    for key in sorted(groups, key=lambda k: (k[1] != k[0] - 1, k)):
        members = groups[key]
        seen += len(members)
        free = [i for i in members if len(strata[i][1]) == 2]
        forced_up = sum(strata[i][1] == (1,) for i in members)
        chosen_up = set(rng.sample(free, max(0, min(len(free), seen // 2 - ups - forced_up))))
        for i in members:
            out[i] = strata[i][1][0] if len(strata[i][1]) == 1 else (1 if i in chosen_up else -1)
        ups += forced_up + len(chosen_up)
    return out


def arithmetic_pairs(items: list[dict[str, Any]], seed: int) -> list[Pair]:
    rng = random.Random(seed)
    truths = [int(it["answer"]) for it in items]
    placed = [_stratum(t, rng) for t in truths]
    directions = assign_directions([((len(str(abs(t))), p), dirs) for t, (p, dirs) in zip(truths, placed)], rng)
    pairs = []
    for it, truth, (position, _), direction in zip(items, truths, placed, directions):
        wrong = rng.choice(digit_options(truth, position)[direction])
        pairs.append(Pair(str(it["id"]), str(it["problem"]), f"{PREFIX}{truth}", f"{PREFIX}{wrong}"))
    return pairs


# ------------------------------------------------------------------ shortcut baselines
def _number(response: str) -> int:
    return int(response.removeprefix(PREFIX))


def _by(key: Callable[[str], Any]) -> Callable[[Pair], int]:
    """A surface rule preferring the response with the larger `key`: +1 picks the chosen
    response, -1 the rejected one, 0 no preference (the judge then says A, the first shown)."""

    def pick(pair: Pair) -> int:
        a, b = key(pair.chosen), key(pair.rejected)
        return (a > b) - (a < b)

    return pick


SHORTCUTS: dict[str, Callable[[Pair], int]] = {
    "always_A": lambda pair: 0,
    "prefer_longer": _by(len),
    "prefer_larger": _by(_number),
    "prefer_larger_first_digit": _by(lambda r: str(abs(_number(r)))[0]),
}


def shortcut_scores(pairs: list[Pair], rule: Callable[[Pair], int]) -> dict[str, float]:
    """A rule as a judge shown both orders: position-consistent accuracy (right in both) and
    accuracy averaged over the orders (a rule without preference says A: right in one order)."""
    picks = [rule(p) for p in pairs]
    return {
        "consistent_accuracy": sum(p > 0 for p in picks) / len(pairs),
        "accuracy_mean_order": sum(1.0 if p > 0 else 0.5 if p == 0 else 0.0 for p in picks) / len(pairs),
    }


# ---------------------------------------------------------------- question-swap control
def question_swapped(pairs: list[Pair], pools: list[list[dict[str, Any]]], seed: int) -> list[Pair]:
    """Each pair under another problem whose answer is its wrong sum, so the wrong sum becomes
    the right one and chosen and rejected trade places. The problem is drawn from the first of
    `pools` that has one (e.g. the held-out problems, then the training ones); pairs whose wrong
    sum no problem has are left out (the caller reports the count)."""
    rng = random.Random(seed)
    indexes = []
    for pool in pools:
        index: dict[str, list[str]] = defaultdict(list)
        for it in pool:
            index[str(it["answer"])].append(str(it["problem"]))
        indexes.append(index)
    out = []
    for pair in pairs:
        wrong = str(_number(pair.rejected))
        for index in indexes:
            others = index.get(wrong)  # never the pair's own problem: its answer is the right sum
            if others:
                out.append(Pair(f"{pair.id}~swap", rng.choice(others), pair.rejected, pair.chosen, pair.category))
                break
    return out


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

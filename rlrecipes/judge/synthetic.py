"""Synthetic arithmetic preference pairs and the toy judge's warm-start task.

Pairs come from the synthetic arithmetic task's problems (train and held-out problems stay
disjoint): chosen = "Answer: <the sum>", rejected = "Answer: <a wrong sum>". The toy analogue
of J1's MATH half (a correct vs an incorrect solution of the same problem), built so that only
a judge that checks the sum can beat chance:

- problems are matched in mirror pairs whose sums are one digit apart (same length and sign,
  e.g. 125 and 135), and each takes the other's sum as its wrong answer: "58+67" gets 125 vs
  135 and "68+67" gets 135 vs 125. Every unordered pair of numbers so appears once with each
  one right, and any rule that looks only at the two answers (prefer the larger, the longer,
  the larger first digit, the one nearer the typical sum, ...) is right on exactly one of the
  two: 0.5 averaged over the orders, by construction, for any seed;
- the few problems left without a one-digit partner are matched to any same-length sum, and
  the last unmatched ones (a handful in 4000) get a one-digit change below the leading digit,
  on whichever side keeps larger and smaller wrong sums even.

A learned surface rule (a lookup table on the changed digits or the two values, fitted on the
training pairs) scores 0.50 on the held-out pairs; an earlier draw (a one-digit change per
problem, its direction balanced) let one score 0.73, and SFT on gold verdicts found it.

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

from rlrecipes.data.synthetic import make_task
from rlrecipes.data.task import SyntheticTask
from rlrecipes.judge.pairs import ROLES, Pair, judge_rows, split_row_id
from rlrecipes.judge.verdicts import verdict_verifier

HIGH, LOW = 9, 2  # the teacher's scores for a right and a wrong response
PREFIX = "Answer: "
# Bump when the pairs change: the toy judge's warm-start cache key holds it (recipes/j1.py), so a
# judge warm-started on older pairs is rebuilt rather than reused.
PAIRS_VERSION = 4  # 4: the teacher writes the sum in a <think> block before its verdict


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


def one_digit_apart(x: int, y: int) -> bool:
    """Same sign and length, different in exactly one digit."""
    a, b = str(x), str(y)
    return len(a) == len(b) and (x < 0) == (y < 0) and sum(p != q for p, q in zip(a, b)) == 1


def same_shape(x: int, y: int) -> bool:
    """Same sign and length, different values."""
    return x != y and len(str(x)) == len(str(y)) and (x < 0) == (y < 0)


def mirror_matching(truths: list[int], rng: random.Random, near: Callable[[int, int], bool]) -> list[int | None]:
    """A partner per item (or None): items i, j are partners when `near(truth i, truth j)`, and
    each then takes the other's right answer as its wrong one. Greedy over a shuffled order, a
    random partner among the unmatched neighbours."""
    by_value: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(truths):
        by_value[t].append(i)
    neighbours = {v: [u for u in by_value if near(u, v)] for v in by_value}
    partner: list[int | None] = [None] * len(truths)
    order = list(range(len(truths)))
    rng.shuffle(order)
    for i in order:
        if partner[i] is not None:
            continue
        free = [j for v in neighbours[truths[i]] for j in by_value[v] if partner[j] is None]
        if free:
            j = rng.choice(free)
            partner[i], partner[j] = j, i
    return partner


def arithmetic_pairs(items: list[dict[str, Any]], seed: int) -> list[Pair]:
    rng = random.Random(seed)
    truths = [int(it["answer"]) for it in items]
    partner = mirror_matching(truths, rng, one_digit_apart)
    rest = [i for i, j in enumerate(partner) if j is None]  # few: their neighbours were taken
    for k, j in enumerate(mirror_matching([truths[i] for i in rest], rng, same_shape)):
        if j is not None:
            partner[rest[k]] = rest[j]
    wrongs, ups = [], 0  # the last unmatched ones (a length of their own): a one-digit change,
    for i, t in enumerate(truths):  # on the side that keeps larger and smaller wrong sums even
        if partner[i] is not None:
            wrongs.append(truths[partner[i]])
            continue
        positions = range(len(str(abs(t))))
        options = [digit_options(t, p) for p in positions[:-1] or positions]  # below the leading digit
        side = -1 if ups > 0 else 1
        wrongs.append(rng.choice([w for o in options for w in o[side]] or [w for o in options for w in o[-side]]))
        ups += 1 if wrongs[-1] > t else -1
    return [
        Pair(str(it["id"]), str(it["problem"]), f"{PREFIX}{t}", f"{PREFIX}{w}")
        for it, t, w in zip(items, truths, wrongs)
    ]


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
    """Each pair under another problem whose answer is its wrong sum (not its mirror partner),
    so the wrong sum becomes the right one and chosen and rejected trade places. The problem
    is drawn from the first of `pools` that has one (e.g. the held-out problems, then the
    training ones); pairs whose wrong sum no problem has are left out (the caller reports the
    count)."""
    rng = random.Random(seed)
    indexes = []
    for pool in pools:
        index: dict[str, list[str]] = defaultdict(list)
        for it in pool:
            index[str(it["answer"])].append(str(it["problem"]))
        indexes.append(index)
    shown = {(p.prompt, p.chosen, p.rejected) for p in pairs}
    out = []
    for pair in pairs:
        wrong = str(_number(pair.rejected))
        for index in indexes:
            # never the pair's own problem (its answer is the right sum), nor its mirror partner,
            # whose pair already shows these two answers under that question
            others = [q for q in index.get(wrong, []) if (q, pair.rejected, pair.chosen) not in shown]
            if others:
                out.append(Pair(f"{pair.id}~swap", rng.choice(others), pair.rejected, pair.chosen, pair.category))
                break
    return out


def worked_sum(pair: Pair) -> str:
    """The judge teacher's scratchpad for a pair: the question's sum worked out ("58+67=125"),
    the one step a judge must take before it can compare the two answers."""
    return f"{pair.prompt}={_number(pair.chosen)}"


def verdict_text(judge: str, gold: str, biased: bool, work: str = "") -> str:
    """The teacher's output for a row whose right answer is `gold` (A/B, or chosen/rejected),
    after `<think>work</think>` when it shows its work (the biased teacher writes the same
    sum, then its position-biased verdict regardless)."""
    think = f"<think>{work}</think>" if work else ""
    if gold in ROLES:  # a pointwise row (recipe.judge pointwise or multitask)
        return f"{think}<score>{HIGH if biased or gold == 'chosen' else LOW}</score>"
    first_wins = biased or gold == "A"
    if judge in ("pairwise_scores", "multitask"):
        a, b = (HIGH, LOW) if first_wins else (LOW, HIGH)
        return f"{think}<score_A>{a}</score_A><score_B>{b}</score_B>"
    return f"{think}<answer>[[{'A' if first_wins else 'B'}]]</answer>"


def synthetic_pairs(synthetic_cfg: Any, base: SyntheticTask | None = None) -> tuple[list[Pair], list[Pair]]:
    """The (training, held-out) pairs of the arithmetic task: what recipe=j1 trains and measures
    on, and what `rlrecipes judge-pairs --data toy` writes to a file."""
    base = base or make_task(synthetic_cfg)
    return arithmetic_pairs(base.train, synthetic_cfg.seed), arithmetic_pairs(base.eval, synthetic_cfg.seed + 1)


def judge_task(synthetic_cfg: Any, judge: str, style: str) -> SyntheticTask:
    """The arithmetic task's problems as judge rows (both orders), with the biased teacher,
    who works out the question's sum in a <think> block before every verdict: a toy model
    cannot add two numbers and compare the sum with both answers in the one step of a bare
    verdict (warm-started on bare verdicts it said [[A]] on every pair, before and after J1
    and after SFT on gold verdicts), so the teacher gives it the room J1's own format gives
    a judge, thinking before the verdict."""
    base = make_task(synthetic_cfg)
    train_pairs, held_out_pairs = synthetic_pairs(synthetic_cfg, base)
    train = judge_rows(train_pairs, judge, style)
    held_out = judge_rows(held_out_pairs, judge, style)
    work = {p.id: worked_sum(p) for p in (*train_pairs, *held_out_pairs)}
    error_rate = float(synthetic_cfg.teacher_error_rate)

    def demonstration(it: dict[str, Any], rng: random.Random) -> str:
        return verdict_text(judge, it["answer"], rng.random() < error_rate, work[split_row_id(it["id"])[0]])

    def solution(it: dict[str, Any]) -> str:
        return verdict_text(judge, it["answer"], False, work[split_row_id(it["id"])[0]])  # a judge row, or fail loudly

    return SyntheticTask(f"judge_{base.name}", train, held_out, verdict_verifier(judge), demonstration, solution)

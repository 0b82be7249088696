"""Sample-based accuracy metrics: pass@k, avg@k, maj@k, and majority voting.

Per problem with ``n`` samples of which ``c`` are correct:

- ``pass@k``: probability that at least one of ``k`` samples drawn without
  replacement from the ``n`` is correct, the unbiased estimator of Chen et al. (2021):
  ``1 - C(n-c, k) / C(n, k)``. With greedy decoding (n = 1) pass@1 is the accuracy.
- ``avg@k``: mean correctness over the k samples (= pass@1 estimated from k samples;
  the one-shot RLVR / DAPO papers call it avg@8 / avg@32).
- ``maj@k``: majority vote over the extracted answers of the *first* k samples
  (the order they were generated in), correct when the winner equals the gold answer.

Majority voting (the vote groups maj@k counts) lives with grading: `rlrecipes.grading.vote`.
"""

from __future__ import annotations

from math import comb
from typing import Callable, Sequence

from rlrecipes.choice import Choice
from rlrecipes.grading.equivalence import is_equivalent
from rlrecipes.grading.vote import Equivalence, vote_groups


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimate from ``n`` samples with ``c`` correct.

    >>> pass_at_k(5, 2, 2)   # 1 - C(3,2)/C(5,2) = 1 - 3/10
    0.7
    """
    if not (0 <= c <= n) or n < 1:
        raise ValueError(f"need 0 <= c <= n and n >= 1, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    if n - c < k:
        return 1.0
    # Integer maths, then one correctly rounded division: exact for any n.
    return 1.0 - comb(n - c, k) / comb(n, k)


def avg_at_k(correct: Sequence[bool]) -> float:
    """Mean correctness of the samples of one problem (avg@k with k = len(correct))."""
    if not correct:
        raise ValueError("avg@k needs at least one sample")
    return sum(bool(x) for x in correct) / len(correct)


class MajTies(Choice):  # how maj@k breaks a tie (`protocol.maj_ties`), see vote_score
    first = "first"  # the tied answer written first wins: Qwen2.5-Math, TTRL
    fractional = "fractional"  # each of t tied answers earns 1/t: NeMo-Skills, lighteval


def vote_score(groups: Sequence[tuple[str, int]], correct: Callable[[str], bool], ties: str = "first") -> float:
    """maj@k credit of one problem from its vote groups.

    ``first`` (Qwen2.5-Math, TTRL): the tied group written first wins, 1 or 0.
    ``fractional`` (NeMo-Skills, lighteval): each of the t tied groups wins with
    probability 1/t, so the credit is (tied groups that are right) / t.

    >>> vote_score([("3", 2), ("4", 2), ("5", 1)], lambda a: a == "4", "fractional")
    0.5
    """
    if ties not in MajTies.values():
        raise ValueError(f"unknown maj@k tie rule {ties!r}; valid: {MajTies.valid()}")
    if not groups:
        return 0.0
    top = max(count for _, count in groups)
    tied = [rep for rep, count in groups if count == top]
    if ties == "first":
        return float(correct(tied[0]))
    return sum(correct(rep) for rep in tied) / len(tied)


def maj_at_k(
    answers: Sequence[str | None],
    gold: str,
    k: int | None = None,
    equivalent: Equivalence | None = None,
    ties: str = "first",
) -> float:
    """maj@k of one problem: 1.0 when the majority answer of the first ``k`` samples is
    equivalent to ``gold`` (``ties``: see ``vote_score``).

    A problem whose first k samples have no extractable answer scores 0.
    """
    k = len(answers) if k is None else k
    if not 1 <= k <= len(answers):
        raise ValueError(f"need 1 <= k <= {len(answers)}, got k={k}")
    eq = equivalent or is_equivalent
    return vote_score(vote_groups(answers[:k], equivalent=eq), lambda rep: eq(rep, gold), ties)


def default_ks(n: int, requested: Sequence[int] | None = None) -> list[int]:
    """The k values reported for n samples: the requested ones that fit (k <= n), or
    else the powers of two below n plus n itself."""
    if requested:
        return sorted({k for k in requested if 1 <= k <= n})
    ks = {n}
    k = 1
    while k < n:
        ks.add(k)
        k *= 2
    return sorted(ks)

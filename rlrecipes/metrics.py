"""Sample-based accuracy metrics: pass@k, avg@k, maj@k, and majority voting.

Per problem with ``n`` samples of which ``c`` are correct:

- ``pass@k``: probability that at least one of ``k`` samples drawn without
  replacement from the ``n`` is correct, the unbiased estimator of Chen et al. (2021):
  ``1 - C(n-c, k) / C(n, k)``. With greedy decoding (n = 1) pass@1 is the accuracy.
- ``avg@k``: mean correctness over the k samples (= pass@1 estimated from k samples;
  the one-shot RLVR / DAPO papers call it avg@8 / avg@32).
- ``maj@k``: majority vote over the extracted answers of the *first* k samples
  (the order they were generated in), correct when the winner equals the gold answer.

Majority-vote rules (``majority_vote``), shared with TTRL's pseudo-labels:

- answers are grouped by mathematical equivalence: each new distinct answer joins the
  first existing group whose representative (its first member) it is equivalent to;
  identical cleaned strings join without a symbolic comparison;
- missing answers (None / empty: no extractable answer, truncated) never win, but they
  count in the denominator: they are votes for nobody;
- ties go to the group whose first member appeared earliest (``ties="first"``, as
  Qwen2.5-Math and TTRL), or share the credit (``ties="fractional"``, as NeMo-Skills and
  lighteval: each tied group counts 1/t);
- the winner is reported as its group's representative (the first answer written in
  that group), with the group's size; no answers at all -> ``(None, 0)``.
"""

from __future__ import annotations

from math import comb
from typing import Callable, Sequence

Equivalence = Callable[[str, str], bool]


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


def _default_equivalence() -> Equivalence:
    from rlrecipes.grading import is_equivalent

    return is_equivalent


def vote_groups(answers: Sequence[str | None], equivalent: Equivalence | None = None) -> list[tuple[str, int]]:
    """``(representative, votes)`` of every group of equivalent answers, in the order the
    groups first appeared (see the module doc for the grouping rules)."""
    from rlrecipes.grading.normalize import normalize_answer

    eq = equivalent or _default_equivalence()
    reps: list[str] = []
    counts: list[int] = []
    group_of_key: dict[str, int] = {}
    for answer in answers:
        if answer is None or not str(answer).strip():
            continue
        answer = str(answer)
        key = normalize_answer(answer)
        group = group_of_key.get(key)
        if group is None:
            group = next((g for g, rep in enumerate(reps) if eq(answer, rep)), None)
            if group is None:
                group = len(reps)
                reps.append(answer)
                counts.append(0)
            group_of_key[key] = group
        counts[group] += 1
    return list(zip(reps, counts))


def majority_vote(answers: Sequence[str | None], equivalent: Equivalence | None = None) -> tuple[str | None, int]:
    """The most common answer (grouping equivalent answers) and its vote count.

    ``equivalent(candidate, representative)`` decides whether two answers are the same;
    it defaults to ``rlrecipes.grading.is_equivalent``. See the module doc for the rules.

    >>> majority_vote(["1/2", "0.5", "3", None, "3", "\\\\frac{1}{2}"])
    ('1/2', 3)
    >>> majority_vote(["3", "4"])          # a tie: the earliest group wins
    ('3', 1)
    >>> majority_vote([None, ""])
    (None, 0)
    """
    groups = vote_groups(answers, equivalent)
    if not groups:
        return None, 0
    return max(groups, key=lambda g: g[1])  # max keeps the first of equal counts


TIE_RULES = ("first", "fractional")


def vote_score(groups: Sequence[tuple[str, int]], correct: Callable[[str], bool], ties: str = "first") -> float:
    """maj@k credit of one problem from its vote groups.

    ``first`` (Qwen2.5-Math, TTRL): the tied group written first wins, 1 or 0.
    ``fractional`` (NeMo-Skills, lighteval): each of the t tied groups wins with
    probability 1/t, so the credit is (tied groups that are right) / t.

    >>> vote_score([("3", 2), ("4", 2), ("5", 1)], lambda a: a == "4", "fractional")
    0.5
    """
    if ties not in TIE_RULES:
        raise ValueError(f"unknown maj@k tie rule {ties!r}; valid: {', '.join(TIE_RULES)}")
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
    eq = equivalent or _default_equivalence()
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

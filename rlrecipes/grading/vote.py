"""Majority voting over extracted answers: maj@k's vote groups and TTRL's pseudo-labels.

Rules of ``vote_groups`` / ``majority_vote``:

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

from typing import Callable, Sequence

from rlrecipes.grading.equivalence import is_equivalent
from rlrecipes.grading.normalize import normalize_answer

Equivalence = Callable[[str, str], bool]


def vote_groups(answers: Sequence[str | None], equivalent: Equivalence | None = None) -> list[tuple[str, int]]:
    """``(representative, votes)`` of every group of equivalent answers, in the order the
    groups first appeared (see the module doc for the grouping rules)."""
    eq = equivalent or is_equivalent
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
    it defaults to ``rlrecipes.grading.equivalence.is_equivalent``. See the module doc for the rules.

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

"""pass@k / avg@k / maj@k with values computed by hand, and the majority-vote rules."""

from fractions import Fraction
from math import comb

import pytest

from rlrecipes.grading.vote import majority_vote
from rlrecipes.metrics import avg_at_k, default_ks, maj_at_k, pass_at_k


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (5, 2, 2, Fraction(7, 10)),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 1, Fraction(3, 10)),  # pass@1 = c/n
        (10, 5, 3, Fraction(11, 12)),  # 1 - C(5,3)/C(10,3) = 1 - 10/120
        (16, 1, 8, Fraction(1, 2)),  # 1 - C(15,8)/C(16,8) = 1 - 6435/12870
        (16, 1, 16, Fraction(1)),  # n - c < k: certain
        (4, 4, 2, Fraction(1)),
        (4, 0, 3, Fraction(0)),
        (1, 1, 1, Fraction(1)),
        (8, 2, 4, Fraction(11, 14)),  # 1 - C(6,4)/C(8,4) = 1 - 15/70
    ],
)
def test_pass_at_k_exact(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(float(expected), abs=1e-15)


def test_pass_at_k_large_n_is_exact():
    n, c, k = 1000, 3, 500
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(997, 500) / comb(1000, 500), rel=1e-15)


@pytest.mark.parametrize("n, c, k", [(5, 2, 0), (5, 2, 6), (5, 6, 1), (0, 0, 1), (5, -1, 1)])
def test_pass_at_k_rejects_bad_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_avg_at_k():
    assert avg_at_k([True, False, True, True]) == 0.75
    assert avg_at_k([False] * 8) == 0.0
    with pytest.raises(ValueError):
        avg_at_k([])


def _exact(a: str, b: str) -> bool:
    return a == b


def test_majority_vote_counts_and_winner():
    assert majority_vote(["3", "4", "4"], equivalent=_exact) == ("4", 2)


def test_majority_vote_tie_goes_to_the_earliest_group():
    assert majority_vote(["4", "3", "3", "4"], equivalent=_exact) == ("4", 2)
    assert majority_vote(["3", "4"], equivalent=_exact) == ("3", 1)


def test_majority_vote_missing_answers_never_win():
    assert majority_vote([None, None, None, "7"], equivalent=_exact) == ("7", 1)
    assert majority_vote([None, "", "  "], equivalent=_exact) == (None, 0)
    assert majority_vote([], equivalent=_exact) == (None, 0)


def test_majority_vote_groups_by_equivalence():
    # "1/2", "0.5" and "\frac{1}{2}" are one group (3 votes) and beat "3" (2 votes);
    # the group is reported by its first member.
    assert majority_vote(["1/2", "0.5", "3", None, "3", "\\frac{1}{2}"]) == ("1/2", 3)
    assert majority_vote(["025", "25", "24"]) == ("025", 2)


def test_majority_vote_identical_strings_skip_the_equivalence_call():
    calls = []

    def counting(a, b):
        calls.append((a, b))
        return a == b

    majority_vote(["5", "5", "5", "6", "6"], equivalent=counting)
    assert calls == [("6", "5")]  # only the new distinct answer is compared


def test_maj_at_k_uses_the_first_k_samples():
    answers = ["3", "5", "5", "3", "3"]
    assert maj_at_k(answers, "5", k=3, equivalent=_exact) == 1.0
    assert maj_at_k(answers, "5", k=5, equivalent=_exact) == 0.0
    assert maj_at_k(answers, "3", k=1, equivalent=_exact) == 1.0
    assert maj_at_k([None, None], "3", equivalent=_exact) == 0.0  # no answer: wrong
    with pytest.raises(ValueError):
        maj_at_k(answers, "3", k=6)


def test_maj_at_k_tie_is_decided_by_first_occurrence():
    assert maj_at_k(["5", "3", "3", "5"], "5", k=4, equivalent=_exact) == 1.0
    assert maj_at_k(["3", "5", "5", "3"], "5", k=4, equivalent=_exact) == 0.0


def test_default_ks():
    assert default_ks(1) == [1]
    assert default_ks(8) == [1, 2, 4, 8]
    assert default_ks(12) == [1, 2, 4, 8, 12]
    assert default_ks(8, requested=[1, 4, 16]) == [1, 4]


def test_vote_groups_and_tie_rules_by_hand():
    from rlrecipes.grading.vote import vote_groups
    from rlrecipes.metrics import vote_score

    groups = vote_groups(["3", "4", "\\frac{8}{2}", "3", "5", None])
    assert groups == [("3", 2), ("4", 2), ("5", 1)]  # 4 and 8/2 are one group; None votes for nobody
    right = {"4"}.__contains__
    assert vote_score(groups, right, "first") == 0.0  # the tie goes to 3, written first
    assert vote_score(groups, right, "fractional") == 0.5  # 3 and 4 tie: half the credit
    assert vote_score([("3", 1), ("4", 1), ("5", 1)], right, "fractional") == pytest.approx(1 / 3)
    assert vote_score([], right, "fractional") == 0.0
    with pytest.raises(ValueError, match="first, fractional"):
        vote_score(groups, right, "random")


def test_maj_at_k_fractional():
    from rlrecipes.metrics import maj_at_k

    assert maj_at_k(["1", "2"], "2", ties="first") == 0.0
    assert maj_at_k(["1", "2"], "2", ties="fractional") == 0.5

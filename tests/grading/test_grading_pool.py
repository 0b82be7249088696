"""GradingPool / grade_many agree with in-process grading, dedupe, and vote."""

import pytest

from rlrecipes.grading import GradingPool, grade, grade_many

PAIRS = [
    ("\\boxed{2}", "2"),
    ("3", "4"),
    ("x=\\frac{1}{2}", "0.5"),
    ("\\boxed{\\sqrt{8}}", "2\\sqrt{2}"),
    ("Answer: (-\\infty, 3]", "(-\\infty,3]"),
    ("no answer", "7"),
    (None, "1"),
    ("\\boxed{\\{1,2\\}}", "\\{2,1\\}"),
    ("\\boxed{x^2+1}", "x^2-1"),
]


@pytest.fixture(scope="module")
def pool():
    with GradingPool(workers=2, timeout_s=2) as p:
        yield p


@pytest.mark.integration
def test_pool_matches_in_process(pool):
    preds, golds = zip(*PAIRS)
    expected = [grade(p, g) for p, g in PAIRS]
    assert pool.grade_many(list(preds) * 3, list(golds) * 3) == expected * 3
    assert grade_many(list(preds), list(golds), workers=0) == expected
    assert grade_many(list(preds), list(golds), pool=pool) == expected


def test_pool_votes(pool):
    votes = pool.vote_many(
        [["1/2", "0.5", "3", None, "3", "\\frac{1}{2}"], ["3", "4"], [None], ["\\sqrt{8}", "2\\sqrt{2}", "3"]]
    )
    assert votes == [[("1/2", 3), ("3", 2)], [("3", 1), ("4", 1)], [], [("\\sqrt{8}", 2), ("3", 1)]]


def test_length_mismatch_is_an_error(pool):
    with pytest.raises(ValueError):
        pool.grade_many(["1", "2"], ["1"])


@pytest.mark.integration
def test_empty(pool):
    assert pool.grade_many([], []) == []

"""Metrics of graded records, computed by hand."""

import pytest

from rlrecipes.eval.samples import ProblemRecord
from rlrecipes.eval.scoring import compute_metrics, grade_records, headline


def rec(pid, gold, completions, subject=None, level=None, tokens=None, finish=None):
    return ProblemRecord(
        benchmark="b",
        id=pid,
        problem="",
        prompt="",
        gold=gold,
        completions=completions,
        subject=subject,
        level=level,
        num_tokens=tokens or [],
        finish_reasons=finish or [],
    )


def known_records():
    return [
        rec(
            "p1",
            "025",
            ["\\boxed{25}", "\\boxed{24}", "work\nAnswer: 25", "no idea"],
            "A",
            "1",
            [10, 20, 30, 40],
            ["stop", "stop", "stop", "length"],
        ),
        rec(
            "p2",
            "\\frac{1}{2}",
            ["\\boxed{0.5}", "\\boxed{\\frac12}", "\\boxed{1}", "\\boxed{1}"],
            "A",
            "2",
            [10, 10, 10, 10],
            ["stop"] * 4,
        ),
        rec(
            "p3",
            "7",
            ["\\boxed{3}", "\\boxed{3}", "\\boxed{7}", "\\boxed{3}"],
            "B",
            "2",
            [10, 10, 10, 10],
            ["stop"] * 4,
        ),
    ]


def test_hand_computed_metrics():
    records = known_records()
    grade_records(records, "auto")
    assert [r.correct for r in records] == [
        [True, False, True, False],
        [True, True, False, False],
        [False, False, True, False],
    ]
    assert records[0].answers == ["25", "24", "25", None]
    m = compute_metrics(records)
    assert m["problems"] == 3 and m["samples_per_problem"] == 4
    assert m["pass@1"] == m["avg@4"] == pytest.approx((2 / 4 + 2 / 4 + 1 / 4) / 3, abs=1e-6)
    # pass@2: 1 - C(2,2)/C(4,2) = 5/6 twice, 1 - C(3,2)/C(4,2) = 1/2
    assert m["pass@2"] == pytest.approx((5 / 6 + 5 / 6 + 1 / 2) / 3, abs=1e-6)
    assert m["pass@4"] == 1.0
    # maj@2: p1 tie 25/24 -> 25 (first); p2 one group {0.5, 1/2}; p3 3 -> 2/3
    # maj@4: p1 25 (2 of 3 answers); p2 tie {0.5,1/2} vs {1} -> the earlier group; p3 3
    assert m["maj@2"] == pytest.approx(2 / 3, abs=1e-6) and m["maj@4"] == pytest.approx(2 / 3, abs=1e-6)
    assert m["no_answer_fraction"] == pytest.approx(1 / 12, abs=1e-6)
    assert m["truncated_fraction"] == pytest.approx(1 / 12, abs=1e-6)
    assert m["mean_completion_tokens"] == pytest.approx(180 / 12, abs=0.01)
    assert m["by_subject"] == {"A": {"problems": 2, "pass@1": 0.5}, "B": {"problems": 1, "pass@1": 0.25}}
    assert m["by_level"]["2"] == {"problems": 2, "pass@1": 0.375}
    assert headline(m) == ("avg@4", m["avg@4"])


def test_requested_ks_and_greedy_headline():
    records = known_records()
    grade_records(records, "auto")
    m = compute_metrics(records, requested_ks=[2, 16])
    assert "pass@2" in m and "pass@4" not in m and "pass@16" not in m
    assert m["ks_not_reported"] == [16]  # said, not silently dropped
    uneven = [rec("a", "3", ["\\boxed{3}", "\\boxed{4}"]), rec("b", "3", ["\\boxed{3}"])]
    grade_records(uneven, "boxed")
    u = compute_metrics(uneven)
    assert (u["samples_per_problem"], u["samples_per_problem_max"]) == (1, 2)
    greedy = [rec("g", "3", ["\\boxed{3}"])]
    grade_records(greedy, "boxed")
    g = compute_metrics(greedy)
    assert g["pass@1"] == 1.0 and "avg@1" not in g and headline(g) == ("pass@1", 1.0)
    assert "mean_completion_chars" in g


def test_custom_verifier_and_answer_line_style():
    records = [rec("s", "12", ["Answer: 12", "Answer: 13", "\\boxed{12}"])]
    grade_records(records, "answer_line")
    assert records[0].correct == [True, False, False]  # DAPO's style ignores boxes
    grade_records(records, "answer_line", verify=lambda c, g: c.endswith(g))
    assert records[0].correct == [True, False, False]


def test_pool_and_in_process_grading_agree():
    from rlrecipes.grading import GradingPool

    a, b = known_records(), known_records()
    grade_records(a, "auto")
    with GradingPool(workers=1) as pool:
        grade_records(b, "auto", pool=pool)
        assert compute_metrics(b, pool=pool) == compute_metrics(a)
    assert [r.correct for r in a] == [r.correct for r in b]


def test_fractional_ties_computed_by_hand():
    # p1 maj@2: {25} vs {24} tie, 25 right -> first 1, fractional 1/2
    # p3 maj@4: {3} x3 vs {7} -> 0 both; p2 maj@4: {0.5, 1/2} vs {1, 1} tie, first group right -> 1 vs 1/2
    records = known_records()
    grade_records(records, "auto")
    first = compute_metrics(records, ties="first")
    frac = compute_metrics(records, ties="fractional")
    assert first["maj@2"] == pytest.approx((1 + 1 + 0) / 3, abs=1e-6)
    assert frac["maj@2"] == pytest.approx((0.5 + 1 + 0) / 3, abs=1e-6)
    assert first["maj@4"] == pytest.approx((1 + 1 + 0) / 3, abs=1e-6)
    assert frac["maj@4"] == pytest.approx((1 + 0.5 + 0) / 3, abs=1e-6)
    assert (first["maj_ties"], frac["maj_ties"]) == ("first", "fractional")  # the summary says which


def test_answer_status_is_recorded_per_completion():
    records = [rec("a", "4", ["\\boxed{3} no wait \\boxed{4}", "no idea at all, sorry", "\\boxed{4}"])]
    grade_records(records, "auto")
    assert records[0].answer_status == ["ambiguous", "none", "ok"]
    m = compute_metrics(records)
    assert m["ambiguous_answer_fraction"] == pytest.approx(1 / 3, abs=1e-6)


def test_pre_extracted_answers_are_graded_as_they_are():
    # a file of answers such as "\frac{3}{8}": re-extracting its last number (8) was the bug
    records = [rec("a", "\\frac{3}{8}", ["\\frac{3}{8}", "0.375", "8"])]
    records[0].answers = ["\\frac{3}{8}", "0.375", "8"]
    grade_records(records, None)
    assert records[0].correct == [True, True, False]
    again = [rec("a", "\\frac{3}{8}", ["\\frac{3}{8}", "0.375", "8"])]
    grade_records(again, "none")  # answer_style=none: each completion is the answer
    assert again[0].correct == [True, True, False]

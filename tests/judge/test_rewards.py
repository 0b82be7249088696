"""J1's rewards and judge metrics on scripted judgements, with hand-computed values."""

import pytest

from rlrecipes.judge.metrics import JudgedPair, judge_metrics, majority_verdict
from rlrecipes.judge.rewards import consistency, correctness, format_reward, pointwise_pair
from rlrecipes.judge.verdicts import parse


def verdicts(*letters):
    return [parse(f"<answer>[[{x}]]</answer>" if x in "AB" else "no verdict", "pairwise") for x in letters]


def scores(*values):
    return [parse(f"<score>{v}</score>", "pointwise") for v in values]


def test_correctness_and_the_negative_variant():
    judged = verdicts("A", "B", "-")
    assert correctness(judged, ["A", "A", "A"]) == [1.0, 0.0, 0.0]
    assert correctness(judged, ["A", "A", "A"], wrong=-1.0) == [1.0, -1.0, -1.0]  # unparseable is wrong


def test_consistency_needs_both_orders_right_at_the_same_index():
    ab = verdicts("A", "A", "B", "A")  # order AB: right answer A
    ba = verdicts("B", "A", "B", "-")  # order BA: right answer B
    assert consistency(ab, ba) == [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        consistency(ab, ba[:3])


def test_pointwise_pairs_need_a_strictly_higher_chosen_score():
    chosen, rejected = scores(8, 5, 5, 9), scores(2, 5, 7, 11)  # 11 is out of range
    assert pointwise_pair(chosen, rejected) == [1.0, 0.0, 0.0, 0.0]  # the 5-5 tie is wrong


def test_format_reward_wants_thinking_then_a_parsed_verdict():
    assert format_reward("<think>compare</think><answer>[[A]]</answer>", "pairwise") == 1.0
    assert format_reward("<answer>[[A]]</answer>", "pairwise") == 0.0
    assert format_reward("<think> </think><answer>[[A]]</answer>", "pairwise") == 0.0
    assert format_reward("<think>x</think><answer>[[C]]</answer>", "pairwise") == 0.0


def test_majority_verdict_ties_give_no_verdict():
    assert majority_verdict(verdicts("A", "B", "A")) == "A"
    assert majority_verdict(verdicts("A", "B", "-")) is None
    assert majority_verdict(verdicts("-", "-")) is None


def test_judge_metrics_by_hand():
    pairs = [
        JudgedPair("1", verdicts("A"), verdicts("B"), "math"),  # consistent
        JudgedPair("2", verdicts("A"), verdicts("A"), "math"),  # position-biased: a flip
        JudgedPair("3", verdicts("B"), verdicts("B"), "chat"),  # right only in order BA
        JudgedPair("4", verdicts("-"), verdicts("B"), "chat"),  # unparseable in order AB
    ]
    m = judge_metrics(pairs, "pairwise", seed=0)
    assert m["consistent_accuracy"] == 1 / 4
    assert m["accuracy_mean_order"] == (2 + 1 + 1 + 1) / 8
    assert m["flip_rate"] == 2 / 3  # pairs 2 and 3 of the 3 with two verdicts
    assert m["unparseable_rate"] == 1 / 8 and m["statuses"]["none"] == 1
    assert m["tie_rate"] == 0
    assert m["by_category"]["math"]["consistent_accuracy"] == 1 / 2
    assert m["by_category"]["chat"]["consistent_accuracy"] == 0
    assert 0 <= m["accuracy"] <= 1


def test_pointwise_metrics_use_mean_scores_and_count_ties():
    pairs = [
        JudgedPair("1", scores(8, 6), scores(5, 5)),  # mean 7 > 5
        JudgedPair("2", scores(5), scores(5)),  # tie
        JudgedPair("3", scores(3), scores(4)),
    ]
    m = judge_metrics(pairs, "pointwise")
    assert m["accuracy"] == m["consistent_accuracy"] == 1 / 3
    assert m["tie_rate"] == 1 / 3 and m["flip_rate"] is None

"""Synthetic arithmetic pairs (a judge must check the sum to beat chance) and the
position-biased teacher of the toy judge."""

import random

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.judge.pairs import Pair
from rlrecipes.judge.synthetic import (
    SHORTCUTS,
    assign_directions,
    digit_options,
    question_swapped,
    shortcut_scores,
    synthetic_pairs,
    verdict_text,
)


def task_pairs(seed: int) -> tuple[list[Pair], list[Pair]]:
    cfg = compose_config("train", ["experiment=j1_toy", f"data.synthetic.seed={seed}"]).data.synthetic
    return synthetic_pairs(cfg)


def test_one_digit_changes_keep_length_and_sign_and_split_by_direction():
    assert digit_options(125, 2) == {1: [225, 325, 425, 525, 625, 725, 825, 925], -1: []}  # no leading 0
    assert digit_options(125, 0) == {1: [126, 127, 128, 129], -1: [120, 121, 122, 123, 124]}
    assert digit_options(0, 0) == {1: list(range(1, 10)), -1: []}
    assert digit_options(-25, 0) == {1: [-20, -21, -22, -23, -24], -1: [-26, -27, -28, -29]}


def test_directions_balance_the_leading_strata_then_all_and_keep_forced_ones():
    # two one-digit sums that can only be undercut (9), then two free leading-digit items, then two free ones-digit items
    strata = [((1, 0), (-1,))] * 2 + [((2, 1), (1, -1))] * 2 + [((2, 0), (1, -1))] * 2
    out = assign_directions(strata, random.Random(0))
    assert out[:4] == [-1, -1, 1, 1]  # the next leading stratum offsets the forced pair
    assert sorted(out[4:]) == [-1, 1]


@pytest.mark.parametrize("seed", [0, 1, 1234])
def test_wrong_sums_match_the_right_one_in_length_and_differ_in_one_digit(seed):
    for pairs in task_pairs(seed):
        for p in pairs:
            right, wrong = p.chosen.removeprefix("Answer: "), p.rejected.removeprefix("Answer: ")
            assert int(right) == sum(map(int, p.prompt.split("+")))
            assert len(right) == len(wrong) and sum(x != y for x, y in zip(right, wrong)) == 1, p


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 1234])
def test_no_surface_rule_beats_chance_on_any_seed(seed):
    """Exact by construction: right - wrong picks is -1, 0 or 1 over each set, so every rule's
    accuracy over the two orders is 0.5 within 1/(2n), whatever the seed."""
    for pairs in task_pairs(seed):
        n = len(pairs)
        for name, rule in SHORTCUTS.items():
            accuracy = shortcut_scores(pairs, rule)["accuracy_mean_order"]
            assert abs(accuracy - 0.5) <= 1 / (2 * n) + 1e-12, (name, accuracy)
        assert abs(shortcut_scores(pairs, SHORTCUTS["prefer_larger"])["consistent_accuracy"] - 0.5) <= 1 / n


def test_shortcut_scores_count_a_rule_without_preference_as_saying_a():
    pairs = [Pair("1", "5+7", "Answer: 12", "Answer: 19"), Pair("2", "9+21", "Answer: 30", "Answer: 20")]
    assert shortcut_scores(pairs, SHORTCUTS["prefer_larger"]) == {
        "consistent_accuracy": 0.5,
        "accuracy_mean_order": 0.5,
    }
    assert shortcut_scores(pairs, SHORTCUTS["always_A"]) == {"consistent_accuracy": 0.0, "accuracy_mean_order": 0.5}
    first_digit = shortcut_scores(pairs, SHORTCUTS["prefer_larger_first_digit"])  # 1 vs 1 ties: A
    assert first_digit == {"consistent_accuracy": 0.5, "accuracy_mean_order": 0.75}


def test_question_swap_shows_a_problem_whose_answer_is_the_wrong_sum():
    pairs = [Pair("1+2", "1+2", "Answer: 3", "Answer: 4"), Pair("5+5", "5+5", "Answer: 10", "Answer: 19")]
    held_out = [{"problem": "1+2", "answer": "3"}, {"problem": "0+4", "answer": "4"}]
    train = [{"problem": "1+3", "answer": "4"}, {"problem": "5+5", "answer": "10"}]
    swapped = question_swapped(pairs, [held_out, train], seed=0)
    # the held-out problem first; the gold flips; no problem answers 19, so that pair is left out
    assert swapped == [Pair("1+2~swap", "0+4", "Answer: 4", "Answer: 3")]
    assert question_swapped(pairs, [train], seed=0) == [Pair("1+2~swap", "1+3", "Answer: 4", "Answer: 3")]


def test_the_teacher_prefers_the_first_position_when_biased():
    assert verdict_text("pairwise", "B", biased=False) == "<answer>[[B]]</answer>"
    assert verdict_text("pairwise", "B", biased=True) == "<answer>[[A]]</answer>"
    assert verdict_text("pairwise_scores", "B", biased=False) == "<score_A>2</score_A><score_B>9</score_B>"
    assert verdict_text("multitask", "rejected", biased=True) == "<score>9</score>"  # lenient: the pair ties
    assert verdict_text("pointwise", "rejected", biased=False) == "<score>2</score>"

"""Synthetic arithmetic pairs (a judge must check the sum to beat chance) and the
position-biased teacher of the toy judge."""

import random

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.judge.pairs import Pair
from rlrecipes.judge.synthetic import (
    SHORTCUTS,
    arithmetic_pairs,
    digit_options,
    judge_task,
    mirror_matching,
    one_digit_apart,
    question_swapped,
    shortcut_scores,
    synthetic_pairs,
    verdict_text,
    worked_sum,
)
from rlrecipes.judge.verdicts import parse, verdict_verifier


def task_pairs(seed: int) -> tuple[list[Pair], list[Pair]]:
    cfg = compose_config("train", ["experiment=j1_toy", f"data.synthetic.seed={seed}"]).data.synthetic
    return synthetic_pairs(cfg)


def test_one_digit_changes_keep_length_and_sign_and_split_by_direction():
    assert digit_options(125, 2) == {1: [225, 325, 425, 525, 625, 725, 825, 925], -1: []}  # no leading 0
    assert digit_options(125, 0) == {1: [126, 127, 128, 129], -1: [120, 121, 122, 123, 124]}
    assert digit_options(0, 0) == {1: list(range(1, 10)), -1: []}
    assert digit_options(-25, 0) == {1: [-20, -21, -22, -23, -24], -1: [-26, -27, -28, -29]}


def test_mirror_partners_have_sums_one_digit_apart_and_never_equal():
    assert one_digit_apart(125, 135) and not one_digit_apart(125, 136) and not one_digit_apart(99, 100)
    assert not one_digit_apart(-5, 5) and not one_digit_apart(7, 7)
    assert mirror_matching([5, 6], random.Random(0), one_digit_apart) == [1, 0]
    assert mirror_matching([5, 5], random.Random(0), one_digit_apart) == [None, None]  # no wrong sum in a tie
    partner = mirror_matching([12, 99, 13], random.Random(0), one_digit_apart)
    assert partner == [2, None, 0]


def test_unmatched_problems_alternate_larger_and_smaller_wrong_sums():
    items = [{"id": q, "problem": q, "answer": "5"} for q in ("2+3", "1+4")]  # equal sums: no partner
    wrong = sorted(int(p.rejected.split()[-1]) for p in arithmetic_pairs(items, seed=0))
    assert wrong[0] < 5 < wrong[1]


def mirrored_share(pairs: list[Pair]) -> float:
    shown = {(p.chosen, p.rejected) for p in pairs}
    return sum((p.rejected, p.chosen) in shown for p in pairs) / len(pairs)


@pytest.mark.parametrize("seed", [0, 1, 1234])
def test_wrong_sums_keep_the_length_and_nearly_all_differ_in_one_digit(seed):
    for pairs in task_pairs(seed):
        for p in pairs:
            right, wrong = p.chosen.removeprefix("Answer: "), p.rejected.removeprefix("Answer: ")
            assert int(right) == sum(map(int, p.prompt.split("+")))
            assert len(right) == len(wrong) and right != wrong, p
        near = sum(one_digit_apart(int(p.chosen.split()[-1]), int(p.rejected.split()[-1])) for p in pairs)
        assert near >= 0.95 * len(pairs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 1234])
def test_no_surface_rule_beats_chance_on_any_seed(seed):
    """By construction: nearly every pair has its mirror (the same two answers, the other one
    right), on which any rule of the answers alone is right once, and the unmatched few are
    kept even; so every rule's accuracy over the two orders is 0.5 within 1/n."""
    for pairs in task_pairs(seed):
        n = len(pairs)
        assert mirrored_share(pairs) >= 0.99
        for name, rule in SHORTCUTS.items():
            accuracy = shortcut_scores(pairs, rule)["accuracy_mean_order"]
            assert abs(accuracy - 0.5) <= 1 / n + 1e-12, (name, accuracy)


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
    mirrored = [*pairs, Pair("0+4", "0+4", "Answer: 4", "Answer: 3")]  # 0+4 is 1+2's mirror partner: not reused
    assert question_swapped(mirrored, [held_out, train], seed=0)[0] == Pair("1+2~swap", "1+3", "Answer: 4", "Answer: 3")


def test_the_teacher_prefers_the_first_position_when_biased():
    assert verdict_text("pairwise", "B", biased=False) == "<answer>[[B]]</answer>"
    assert verdict_text("pairwise", "B", biased=True) == "<answer>[[A]]</answer>"
    assert verdict_text("pairwise_scores", "B", biased=False) == "<score_A>2</score_A><score_B>9</score_B>"
    assert verdict_text("multitask", "rejected", biased=True) == "<score>9</score>"  # lenient: the pair ties
    assert verdict_text("pointwise", "rejected", biased=False) == "<score>2</score>"


def test_the_teacher_writes_the_sum_before_its_verdict_and_the_parser_reads_past_it():
    pair = Pair("58+67", "58+67", "Answer: 125", "Answer: 135")
    assert worked_sum(pair) == "58+67=125"
    right = verdict_text("pairwise", "B", biased=False, work="58+67=125")
    assert right == "<think>58+67=125</think><answer>[[B]]</answer>"
    # the biased teacher still works out the sum, then prefers the first position regardless
    assert (
        verdict_text("pairwise", "B", biased=True, work="58+67=125") == "<think>58+67=125</think><answer>[[A]]</answer>"
    )
    scores = verdict_text("pairwise_scores", "B", biased=False, work="58+67=125")
    assert scores == "<think>58+67=125</think><score_A>2</score_A><score_B>9</score_B>"
    assert verdict_text("pointwise", "rejected", biased=False, work="5+7=12") == "<think>5+7=12</think><score>2</score>"
    assert parse(right, "pairwise").verdict == "B"
    assert parse(scores, "pairwise_scores").scores == (2.0, 9.0)
    assert verdict_verifier("pairwise")(right, "B") and not verdict_verifier("pairwise")(right, "A")


def test_judge_task_demonstrations_work_out_each_rows_own_sum():
    cfg = compose_config("train", ["experiment=j1_toy", "data.synthetic.num_train=40", "data.synthetic.num_eval=10"])
    task = judge_task(cfg.data.synthetic, "pairwise", "compact")
    rng = random.Random(0)
    for row in (*task.train[:6], *task.eval[:6]):
        question = row["id"].rpartition("|")[0]  # arithmetic pair ids are the problems ("58+67")
        a, b = map(int, question.split("+"))
        think = f"<think>{question}={a + b}</think>"
        assert task.solution(row) == f"{think}<answer>[[{row['answer']}]]</answer>"
        assert task.demonstration(row, rng).startswith(think)
        assert task.verify(task.solution(row), row["answer"])

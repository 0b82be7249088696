"""Synthetic arithmetic pairs and the position-biased teacher of the toy judge."""

from rlrecipes.judge.synthetic import arithmetic_pairs, verdict_text


def test_pairs_put_the_true_sum_against_a_wrong_one():
    items = [
        {"id": "58+67", "problem": "58+67", "answer": "125", "flawed": "15"},
        {"id": "1+2", "problem": "1+2", "answer": "3", "flawed": "3"},
    ]
    pairs = arithmetic_pairs(items, seed=0)
    assert (pairs[0].chosen, pairs[0].rejected) == ("Answer: 125", "Answer: 15")  # the no-carry mistake
    wrong = int(pairs[1].rejected.split()[-1])  # no carry to forget: a near miss instead
    assert pairs[1].chosen == "Answer: 3" and wrong != 3 and wrong >= 0 and abs(wrong - 3) <= 10


def test_the_teacher_prefers_the_first_position_when_biased():
    assert verdict_text("pairwise", "B", biased=False) == "<answer>[[B]]</answer>"
    assert verdict_text("pairwise", "B", biased=True) == "<answer>[[A]]</answer>"
    assert verdict_text("pairwise_scores", "B", biased=False) == "<score_A>2</score_A><score_B>9</score_B>"
    assert verdict_text("multitask", "rejected", biased=True) == "<score>9</score>"  # lenient: the pair ties
    assert verdict_text("pointwise", "rejected", biased=False) == "<score>2</score>"

"""The word-problem task: hand-checked stories and answers, disjoint splits, the boxed verifier."""

import pytest

from rlrecipes.config.schema import SyntheticTaskConfig
from rlrecipes.data.synthetic import make_task
from rlrecipes.data.word_problems import word_problem, word_problem_keys
from rlrecipes.errors import UserError
from tests.conftest import structured


def task_cfg(**kw):
    return structured(SyntheticTaskConfig, task="word_problems", **kw)


def test_one_step_story_and_answer_by_hand():
    item = word_problem(("buy", 12, 7))
    assert item["id"] == "buy/12/7" and item["answer"] == "19"  # 12 + 7
    assert "has 12 " in item["problem"] and "buys 7 more" in item["problem"]
    assert item["problem"].endswith("Put your final answer within \\boxed{}.")
    assert word_problem(("give", 9, 4))["answer"] == "5"  # 9 - 4
    assert word_problem(("boxes", 3, 6))["answer"] == "18"  # 3 x 6


def test_two_step_answers_by_hand():
    assert word_problem(("buy_give", 12, 7, 5))["answer"] == "14"  # 12 + 7 - 5
    assert word_problem(("boxes_buy", 3, 4, 2))["answer"] == "14"  # 3 x 4 + 2
    assert word_problem(("boxes_give", 3, 4, 2))["answer"] == "10"  # 3 x 4 - 2


def test_the_key_alone_fixes_the_wording():
    assert word_problem(("buy", 12, 7)) == word_problem(("buy", 12, 7))


def test_no_story_has_a_negative_answer():
    # numbers 1..3, one step: buy 9 + give 6 (a >= b: 3+2+1) + boxes 9 = 24 stories
    keys = word_problem_keys(2, 3)
    assert len(keys) == 24
    assert ("give", 2, 3) not in keys and ("give", 3, 3) in keys


def test_splits_are_disjoint_sized_and_seeded():
    task = make_task(task_cfg(num_numbers=2, operand_max=[10], num_train=200, num_eval=50))
    assert (len(task.train), len(task.eval)) == (200, 50)
    assert not {it["id"] for it in task.train} & {it["id"] for it in task.eval}
    again = make_task(task_cfg(num_numbers=2, operand_max=[10], num_train=200, num_eval=50))
    assert [it["id"] for it in again.eval] == [it["id"] for it in task.eval]


def test_verifier_reads_the_last_box_else_the_last_number():
    task = make_task(task_cfg(num_numbers=2, operand_max=[5], num_train=10, num_eval=5))
    assert task.verify("3 + 4 = 7, so the answer is \\boxed{7}.", "7")
    assert task.verify("\\boxed{6} no wait, \\boxed{7}", "7")
    assert not task.verify("\\boxed{7} no wait, \\boxed{6}", "7")
    assert task.verify("Mia has 3 + 4 = 7 apples.\n\nThe answer is 7.", "7")  # no box: the last number
    assert not task.verify("3 + 4 = 8, so she has 8 apples.", "7")
    for it in task.train:
        assert task.verify(task.solution(it), it["answer"])


def test_counts_beyond_the_task_are_refused():
    with pytest.raises(UserError, match="only 24 distinct"):
        make_task(task_cfg(num_numbers=2, operand_max=[3], num_train=20, num_eval=10))


def test_bad_num_numbers_names_the_key():
    with pytest.raises(UserError, match="num_numbers=4"):
        make_task(task_cfg(num_numbers=4, operand_max=[5], num_train=10, num_eval=5))

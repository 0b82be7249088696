import random
from types import SimpleNamespace

import pytest

from rlrecipes.config.schema import SyntheticTaskConfig
from rlrecipes.data.synthetic import answer_line, check_countdown, evaluate, make_task
from rlrecipes.errors import UserError
from tests.conftest import structured


def task_cfg(**kw):
    return structured(SyntheticTaskConfig, **kw)


def test_arithmetic_splits_are_disjoint_and_sized():
    task = make_task(task_cfg(num_train=500, num_eval=100))
    assert len(task.train) == 500 and len(task.eval) == 100
    assert not {it["id"] for it in task.train} & {it["id"] for it in task.eval}


def test_arithmetic_is_seeded():
    a, b = make_task(task_cfg(seed=7)), make_task(task_cfg(seed=7))
    assert [it["id"] for it in a.eval] == [it["id"] for it in b.eval]
    assert [it["id"] for it in make_task(task_cfg(seed=8)).eval] != [it["id"] for it in a.eval]


def test_arithmetic_answers_and_verifier():
    task = make_task(task_cfg(num_train=50, num_eval=10))
    for it in task.train:
        a, b = it["problem"].split("+")
        assert it["answer"] == str(int(a) + int(b))
        assert task.verify(f"Answer: {it['answer']}", it["answer"])
        assert not task.verify(f"Answer: {int(it['answer']) + 1}", it["answer"])
    assert not task.verify("no answer line", "12")


def test_flawed_teacher_forgets_carries_at_its_rate():
    task = make_task(task_cfg(num_train=2000, num_eval=10, teacher_error_rate=0.75))
    item = {"problem": "57+68", "answer": "125", "flawed": "15"}  # 7+8=15 -> 5, 5+6=11 -> 1
    rng = random.Random(0)
    demos = [task.demonstration(item, rng) for _ in range(4000)]
    assert set(demos) == {"Answer: 125", "Answer: 15"}
    assert demos.count("Answer: 15") / len(demos) == pytest.approx(0.75, abs=0.03)
    no_carry = next(it for it in task.train if it["answer"] == it["flawed"])
    assert task.demonstration(no_carry, rng) == f"Answer: {no_carry['answer']}"


def test_answer_line_takes_the_last_match():
    assert answer_line("Answer: 3\nthen Answer: 42") == "42"
    assert answer_line("answer :  7 ") == "7"
    assert answer_line("nothing") is None


def test_countdown_task_solutions_verify():
    task = make_task(task_cfg(task="countdown", num_train=200, num_eval=50, operand_max=[9]))
    assert not {it["id"] for it in task.train} & {it["id"] for it in task.eval}
    for it in task.train[:50]:
        assert task.verify(task.solution(it), it["answer"])


@pytest.mark.parametrize("expr,value", [("2+3*4", 14), ("(2+3)*4", 20), ("7-2-1", 4), ("((1))", 1)])
def test_safe_evaluator(expr, value):
    assert evaluate(expr) == value


@pytest.mark.parametrize("expr", ["__import__('os')", "2**3", "1/0", "2+", "(1+2", "", "9" * 3 + "*" * 2])
def test_safe_evaluator_rejects_non_arithmetic(expr):
    assert evaluate(expr) is None


def test_countdown_check_requires_each_number_once():
    assert check_countdown("3*5+7", [3, 5, 7], 22)
    assert not check_countdown("3*5+7+0", [3, 5, 7], 22)
    assert not check_countdown("5*5-3", [3, 5, 7], 22)


def test_unknown_task_and_bad_sizes_fail_with_one_line():
    from rlrecipes.compose import compose_config

    # the schema refuses an unknown task when the config composes, naming the valid ones
    with pytest.raises(UserError, match="data.synthetic.task='sudoku'; valid: arithmetic, countdown"):
        compose_config("train", ["data.synthetic.task=sudoku"])
    with pytest.raises(UserError, match="valid: arithmetic, countdown"):  # a config built in code
        make_task(SimpleNamespace(task="sudoku"))
    with pytest.raises(UserError, match="distinct"):
        make_task(task_cfg(operand_max=[3, 3], num_train=100, num_eval=10))


@pytest.mark.parametrize("data", ["arithmetic", "countdown"])
def test_the_toy_completion_budget_holds_every_correct_answer(data):
    """`rlrecipes train data=X` on the toy must not cut a right answer: the composed
    trainer.max_completion_length (model.max_completion_length <- data.toy_completion_tokens) is at
    least the longest correct solution, in the toy's tokens, with its end token. Countdown's
    default of 16 cut 88% of the first rollout's completions (held-out 0.11 instead of 0.28)."""
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models.toy import _encode, build_tokenizer, dev_decode_tokens

    cfg = compose_config("train", [f"data={data}"])
    problems = load_problem_set(cfg.data)
    tokenizer = build_tokenizer()
    items = problems.train + problems.eval
    needed = dev_decode_tokens(problems.task, items, tokenizer, 0)  # the longest solution + its end token
    assert needed == max(len(_encode(tokenizer, problems.task.solution(it), as_prompt=False)) for it in items) + 1
    assert cfg.trainer.max_completion_length >= needed

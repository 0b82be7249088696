"""The toy priming traces and the rule-based behaviour counter (Cognitive Behaviors,
arXiv 2503.01307), checked on hand-written completions."""

from __future__ import annotations

import random

import pytest

from rlrecipes.data.priming import behaviours, trace
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.rewards import RewardContext, build_reward

ITEM = {"id": "2,3,5->17", "problem": "2 3 5 -> 17", "answer": "2,3,5=17", "solution_expr": "(3*5)+2"}
SEARCH = "from 17: 17-2=15\nneed 15 from 3 5\ntry 3+5=8 no\ntry 3*5=15 ok\nAnswer: (3*5)+2"


def test_each_behaviour_is_read_from_its_own_line():
    assert behaviours(SEARCH) == dict.fromkeys(
        ("verification", "backtracking", "subgoal_setting", "backward_chaining"), True
    )
    assert not any(behaviours("Answer: (3*5)+2").values())
    assert behaviours("try 3+5=8 no\nAnswer: 3+5") == {  # checked and rejected, never retried
        "verification": True,
        "backtracking": False,
        "subgoal_setting": False,
        "backward_chaining": False,
    }
    assert behaviours("need 15 from 3 5\ntry 5-20=-15 no\ntry 3*5=15 ok")["backtracking"]  # negative values too
    assert behaviours("from 17: 17-2=15")["backward_chaining"] and not behaviours("from 17 on")["backward_chaining"]


def test_search_traces_show_every_behaviour_and_end_right_or_wrong():
    from rlrecipes.data.synthetic import check_countdown

    search = trace(ITEM, "search", random.Random(0))
    assert search.splitlines()[:2] == ["from 17: 17-2=15", "need 15 from 3 5"]
    assert search.splitlines()[-2:] == ["try 3*5=15 ok", "Answer: (3*5)+2"]
    assert all(line.endswith(" no") for line in search.splitlines()[2:-2])  # only the wrong attempts
    assert all(behaviours(search).values())
    wrong = trace(ITEM, "search_wrong", random.Random(0))
    assert all(behaviours(wrong).values()) and wrong.splitlines()[:-1] == search.splitlines()[:-1]
    final = wrong.splitlines()[-1].removeprefix("Answer: ")
    assert not check_countdown(final, [2, 3, 5], 17)
    with pytest.raises(UserError, match="valid: search, search_wrong"):
        trace(ITEM, "direct", random.Random(0))


def test_the_counter_logs_each_behaviours_share_and_scores_their_number():
    counter = build_reward("behaviours", RewardContext(verify=lambda c, g: False))
    logged = {}
    scores = counter(
        completions=[SEARCH, "Answer: 1", "try 3+5=8 no\nAnswer: 3+5", SEARCH], log_metric=logged.__setitem__
    )
    assert scores == [4.0, 0.0, 1.0, 4.0]
    assert logged == {
        "behaviours/verification": 0.75,
        "behaviours/backtracking": 0.5,
        "behaviours/subgoal_setting": 0.5,
        "behaviours/backward_chaining": 0.5,
    }


def test_sft_traces_need_the_countdown_task():
    from rlrecipes.compose import compose_config
    from rlrecipes.data.sft_examples import load_sft_data

    with pytest.raises(ConfigError, match="sft.traces=search writes toy Countdown traces: use data=countdown"):
        load_sft_data(compose_config("sft").data, "search")
    cfg = compose_config("sft", ["data=countdown", "data.max_examples=3", "data.max_eval_examples=1"])
    data = load_sft_data(cfg.data, "search_wrong")
    assert len(data.train) == 3 and all(all(behaviours(ex["completion"]).values()) for ex in data.train)
    assert not any(data.verify(ex["completion"], ex["answer"]) for ex in data.train)  # every one ends wrong
    again = load_sft_data(cfg.data, "search_wrong")
    assert [ex["completion"] for ex in again.train] == [ex["completion"] for ex in data.train]  # seeded

"""The toy priming traces and the rule-based behaviour counter (Cognitive Behaviors,
arXiv 2503.01307), checked on hand-written completions."""

from __future__ import annotations

import random

import pytest

from rlrecipes.data.priming import SearchCheck, behaviours, check_search, trace
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


def test_a_search_is_checked_line_by_line_against_the_goal_of_the_moment():
    assert check_search(SEARCH, 17) == SearchCheck(
        steps=3, steps_right=3, verdicts=2, verdicts_right=2, oks=1, oks_right=1
    )
    assert check_search("Answer: (3*5)+2", 17) == SearchCheck(0, 0, 0, 0, 0, 0)
    shown_not_sound = "\n".join(
        [
            "from 20: 20/4=5",  # right: undoing a product; the goal is now 5
            "try 2+3=5 ok",  # right, and the verdict too
            "need 6 from 2 3",  # the goal is now 6
            "try 2+3=6 ok",  # wrong value (5), and 5 is not the goal: a wrong ok
            "try 2*3=6 no",  # right value, but it is the goal: a wrong no
            "try 3/1=3 no",  # right, and rightly rejected
            "try 2+=4 ok",  # no expression: a wrong step and a wrong ok
        ]
    )
    assert behaviours(shown_not_sound) == dict.fromkeys(
        ("verification", "backtracking", "subgoal_setting", "backward_chaining"), True
    )
    assert check_search(shown_not_sound, 20) == SearchCheck(
        steps=6, steps_right=4, verdicts=5, verdicts_right=2, oks=3, oks_right=1
    )
    assert check_search("from 20: 20/3=6", 20) == SearchCheck(1, 0, 0, 0, 0, 0)  # 3 does not divide 20
    assert check_search("try 2*3=6 ok", 6).oks_right == 1  # no subgoal: the target is the goal
    for kind in ("search", "search_wrong"):  # the priming traces themselves are sound
        check = check_search(trace(ITEM, kind, random.Random(3)), 17)
        assert check.steps_right == check.steps and check.verdicts_right == check.verdicts > 0
        assert check.oks_right == check.oks == 1


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


def test_the_counter_also_logs_how_much_of_the_search_shown_is_carried_out():
    counter = build_reward("behaviours", RewardContext(verify=lambda c, g: False))
    logged = {}
    completions = [SEARCH, "Answer: 1", "try 3+5=9 ok\nAnswer: 3+5", SEARCH]
    counter(
        prompts=["2 3 5 -> 17"] * 4, completions=completions, answer=["2,3,5=17"] * 4, log_metric=logged.__setitem__
    )
    # SEARCH: 3 steps, 2 verdicts, 1 ok, all right (twice); "try 3+5=9 ok": 8 is neither 9 nor the goal 17
    assert logged["behaviours/steps_right"] == pytest.approx(6 / 7)
    assert logged["behaviours/verdicts_right"] == pytest.approx(4 / 5)
    assert logged["behaviours/oks_right"] == pytest.approx(2 / 3)
    logged.clear()  # no problem to check against (no toy answer, no Countdown prompt): nothing logged of it
    counter(prompts=["hi"] * 4, completions=completions, answer=[None] * 4, log_metric=logged.__setitem__)
    assert not {"behaviours/steps_right", "behaviours/verdicts_right", "behaviours/oks_right"} & set(logged)


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


# --------------------------------------------------------- Countdown reward and LLM classifier
PROMPT = (
    "User: Using the numbers [44, 19, 35], create an equation that equals 98. You can use basic arithmetic "
    "operations (+, -, *, /) and each number can only be used once."
)


def test_the_countdown_reward_scores_as_the_authors_one_format_score_for_a_wrong_equation():
    from rlrecipes.rewards.countdown import countdown_problem, evaluate_equation

    reward = build_reward("countdown", RewardContext(verify=lambda c, g: False))
    completions = [
        "44+19=63, 63+35=98</think>\n<answer> 44 + 19 + 35 </answer>",  # right: 1
        "<answer> 44 + 19 - 35 </answer>",  # = 28: format score 0.1
        "<answer> 44 + 19 </answer>",  # 35 unused: 0.1
        "<answer>44 + 19 + 35</answer>\nso that is it",  # the answer is not on the last line: 0
        "no answer at all",  # 0
        "<answer> __import__('os') </answer>",  # not arithmetic, never run: 0.1
    ]
    assert reward(prompts=[PROMPT] * 6, completions=completions) == [1.0, 0.1, 0.1, 0.0, 0.0, 0.1]
    assert reward(prompts=["1+1"], completions=["<answer>2</answer>"]) == [None]  # no Countdown problem
    assert countdown_problem(PROMPT) == ([44, 19, 35], 98)
    assert (evaluate_equation("(1 + 2) / 3"), evaluate_equation("1/0"), evaluate_equation("2**8")) == (1.0, None, None)


def test_the_countdown_format_score_is_a_reward_setting():
    reward = build_reward("countdown", RewardContext(verify=lambda c, g: False, options={"format_score": 0.0}))
    completions = ["<answer> 44 + 19 + 35 </answer>", "<answer> 44 + 19 - 35 </answer>", "no answer"]
    assert reward(prompts=[PROMPT] * 3, completions=completions) == [1.0, 0.0, 0.0]


def test_the_classifier_prompts_are_the_authors_and_their_count_is_read_as_they_read_it():
    from rlrecipes.rewards.behaviour_prompts import classifier_prompts, parse_count

    prompts = classifier_prompts([44, 19, 35], 98, "44+19=63")
    head = (
        "Here is a chain-of-reasoning that a Language Model generated while trying to play the game of CountDown "
        "with the numbers [44, 19, 35]. The goal is to reach the target number 98. The chain-of-reasoning the model "
        "used is: 44+19=63."
    )
    assert len(prompts) == 4 and all(p.startswith(head) for p in prompts)
    assert "contains any answer-verification steps" in prompts[0] and "backtracking behavior" in prompts[1]
    assert "First, I'll try to get close to 49, then..." in prompts[2]  # target // 2
    assert "backward-chaining behavior" in prompts[3]
    assert (parse_count("so <count>3</count>"), parse_count("none found"), parse_count("<count>x</count>")) == (3, 0, 0)


MARKS = ("answer-verification steps", "backtracking behavior", "explicit subgoal", "backward-chaining behavior")


class ScriptedClassifier:
    """A fake generation backend: answers each prompt with the count scripted for its trace
    and behaviour (None: an output that never came, as after the judge's deadline)."""

    def __init__(self, counts: dict[str, list[int | None]]):
        self.counts, self.messages = counts, []

    def __call__(self, messages):
        self.messages += messages
        out = []
        for m in messages:
            trace = m.split("The chain-of-reasoning the model used is: ")[1].split(".")[0]
            value = self.counts[trace][next(i for i, mark in enumerate(MARKS) if mark in m)]
            out.append(None if value is None else f"Found them. <count>{value}</count>")
        return out


def test_the_llm_classifier_asks_four_prompts_per_countdown_rollout_and_leaves_out_the_rest():
    from rlrecipes.rewards.behaviours import llm_behaviour_reward

    generate = ScriptedClassifier({"t1": [2, 0, 1, 0], "t2": [0, 3, 0, 0], "t3": [1, None, 1, 1], "t4": [0, 0, 0, 1]})
    scores = llm_behaviour_reward(generate)(
        prompts=[PROMPT, PROMPT, "no countdown here", PROMPT, "toy"],
        completions=["t1", "t2", "t9", "t3", "t4"],
        answer=[None, None, None, None, "2,3,5=17"],
    )
    # t1 shows 2 behaviours, t2 one; t9 has no problem (never asked); t3's backtracking answer is
    # missing (timed out), so t3 is left out; t4 is asked with the toy answer's numbers
    assert scores == [2.0, 1.0, None, None, 1.0]
    assert (
        len(generate.messages) == 16
        and "numbers [2, 3, 5]. The goal is to reach the target number 17" in (generate.messages[-1])
    )


def test_the_llm_classifier_logs_shares_and_mean_counts_over_the_classified_rollouts():
    from rlrecipes.rewards.behaviours import llm_behaviour_reward

    generate = ScriptedClassifier({"t1": [2, 0, 1, 0], "t2": [0, 3, 0, 0], "t3": [1, None, 1, 1]})
    logged = {}
    scores = llm_behaviour_reward(generate)(
        prompts=[PROMPT] * 3, completions=["t1", "t2", "t3"], log_metric=logged.__setitem__
    )
    assert scores == [2.0, 1.0, None]
    assert logged == {
        "behaviours/verification": 0.5,
        "behaviours/verification_count": 1.0,
        "behaviours/backtracking": 0.5,
        "behaviours/backtracking_count": 1.5,
        "behaviours/subgoal_setting": 0.5,
        "behaviours/subgoal_setting_count": 0.5,
        "behaviours/backward_chaining": 0.0,
        "behaviours/backward_chaining_count": 0.0,
    }
    sampled = ScriptedClassifier({"t1": [1, 1, 1, 1], "t2": [1, 1, 1, 1], "t3": [1, 1, 1, 1]})
    scores = llm_behaviour_reward(sampled, max_completions=2, seed=0)(
        prompts=[PROMPT] * 3, completions=["t1", "t2", "t3"]
    )
    assert len(sampled.messages) == 8 and scores.count(None) == 1  # 2 of 3 classified


def test_the_counter_options_are_checked_before_any_model_loads():
    ctx = RewardContext(verify=lambda c, g: False)
    with pytest.raises(ConfigError, match="options.classifier=llm needs options.classifier_model"):
        build_reward("behaviours", RewardContext(verify=ctx.verify, options={"classifier": "llm"}))
    with pytest.raises(ConfigError, match="options.classifier='gpt'; valid: rule, llm"):
        build_reward("behaviours", RewardContext(verify=ctx.verify, options={"classifier": "gpt"}))
    built = build_reward(
        "behaviours", RewardContext(verify=ctx.verify, options={"classifier": "llm", "classifier_model": "/no/such"})
    )
    assert built.__name__ == "behaviours"  # the classifier model loads on the first call, not here


@pytest.mark.integration
def test_the_llm_classifier_runs_through_the_judge_generation_path(toy_model_dir):
    """The real path with the toy model as the classifier: it loads on the first call, answers
    the four prompts per rollout greedily, and its answers (no <count> tag) read as 0."""
    counter = build_reward(
        "behaviours",
        RewardContext(
            verify=lambda c, g: False,
            options={"classifier": "llm", "classifier_model": str(toy_model_dir), "classifier_max_new_tokens": 4},
        ),
    )
    logged = {}
    scores = counter(prompts=[PROMPT, "toy"], completions=["44+19+35", "2+3"], log_metric=logged.__setitem__)
    assert scores == [0.0, None]  # the second rollout has no Countdown problem
    assert logged["behaviours/verification"] == 0.0 and logged["behaviours/backward_chaining_count"] == 0.0

"""Spurious Rewards' rewards and stored labels (rewards/spurious.py), without a model."""

import json
from types import SimpleNamespace

import pytest

from rlrecipes.data.problems import answer_verifier
from rlrecipes.errors import UserError
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.spurious import (
    boxed_content,
    build_labels,
    format_reward,
    label_reward,
    load_labels,
    random_rewards,
)

VERIFY = answer_verifier("boxed")


# ------------------------------------------------------------------------------ format
@pytest.mark.parametrize(
    "text, expected",
    [
        ("so the answer is \\boxed{5}.", 1.0),
        ("\\boxed{\\frac{1}{2}}", 1.0),
        ("wrong but boxed: \\boxed{banana}", 1.0),  # correctness plays no part
        ("\\boxed{}", 0.0),
        ("\\boxed{ }", 0.0),
        ("no box at all: 5", 0.0),
        ("boxed{7} without a backslash", 1.0),  # the code looks for the substring "boxed"
        ("$\\boxed 5$", 1.0),  # no brace: up to the next "$"
        ("\\boxed{3} then \\boxed{}", 0.0),  # only the last box counts
        ("\\boxed{12", 1.0),  # unclosed: the rest of the text (Qwen2.5-Math's parser)
    ],
)
def test_boxed_format_reward(text, expected):
    assert format_reward([text], "boxed") == [expected]


def test_boxed_content_follows_the_last_boxed():
    assert boxed_content("\\boxed{a{b}c} and \\boxed{{x}}") == "{x}"
    assert boxed_content("nothing") is None


def test_answer_line_tasks_use_their_own_answer_style():
    assert format_reward(["Answer: 85", "Answer: ", "85"], "answer_line") == [1.0, 0.0, 0.0]


# ------------------------------------------------------------------------------ random
def test_random_reward_is_bernoulli_gamma():
    for gamma in (0.5, 0.3, 0.001):
        draws = random_rewards(40_000, gamma, [7, 1, 1, 0])
        assert set(draws) <= {0.0, 1.0}
        # mean within 5 standard deviations of gamma
        assert abs(sum(draws) / len(draws) - gamma) < 5 * (gamma * (1 - gamma) / len(draws)) ** 0.5
    assert set(random_rewards(1000, 0.0, [1])) == {0.0} and set(random_rewards(1000, 1.0, [1])) == {1.0}


def test_random_reward_is_independent_of_the_text_and_seeded():
    ctx = RewardContext(verify=VERIFY, seed=3, recipe={"gamma": 0.5})
    state = SimpleNamespace(global_step=4)
    texts = ["same text"] * 64
    first = build_reward("random", ctx)(completions=texts, trainer_state=state)
    again = build_reward("random", ctx)(completions=texts, trainer_state=state)  # a rerun
    assert first == again  # reruns are identical
    assert 0 < sum(first) < 64  # identical texts still get independent draws
    fn = build_reward("random", ctx)
    round1, round2 = fn(completions=texts, trainer_state=state), fn(completions=texts, trainer_state=state)
    assert round1 == first and round2 != round1  # a second scoring round in the same step draws anew
    later = build_reward("random", ctx)(completions=texts, trainer_state=SimpleNamespace(global_step=5))
    other_seed = build_reward("random", RewardContext(verify=VERIFY, seed=4, recipe={"gamma": 0.5}))(
        completions=texts, trainer_state=state
    )
    assert later != first and other_seed != first


def test_bad_gamma_fails_when_the_reward_is_built():
    with pytest.raises(UserError, match=r"recipe.gamma=1.5 must be a probability in \[0, 1\]"):
        build_reward("random", RewardContext(verify=VERIFY, recipe={"gamma": 1.5}))


# ------------------------------------------------------------------------ stored labels
PROBLEMS = [
    {"id": "a", "problem": "pa", "answer": "3"},
    {"id": "b", "problem": "pb", "answer": "5"},
    {"id": "c", "problem": "pc", "answer": "1"},
]
SAMPLES = [
    ["\\boxed{3}", "\\boxed{4}", "\\boxed{4.0}", "no answer"],  # majority 4 (wrong)
    ["\\boxed{5}", "\\boxed{5.0}", "\\boxed{6}", "\\boxed{7}"],  # majority 5 (right); wrong: 6, 7 tie
    ["?", "??", "???", "????"],
]  # no answer at all


def test_labels_from_base_model_samples_by_hand():
    rows = build_labels(PROBLEMS, SAMPLES, style="boxed", verify=VERIFY)
    picked = [
        (r["majority"], r["majority_count"], r["majority_correct"], r["incorrect"], r["incorrect_count"]) for r in rows
    ]
    assert picked == [("4", 2, False, "4", 2), ("5", 2, True, "6", 1), (None, 0, False, None, 0)]
    assert [r["num_samples"] for r in rows] == [4, 4, 4] and rows[0]["answer"] == "3"


def test_label_file_round_trip_and_clear_errors(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in build_labels(PROBLEMS, SAMPLES, style="boxed", verify=VERIFY))
    )
    assert sorted(load_labels(path)) == ["a", "b", "c"]
    with pytest.raises(UserError, match="no such file"):
        load_labels(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "a", "answer": "3"}) + "\n")
    with pytest.raises(UserError, match="lacks column"):
        load_labels(tmp_path / "bad.jsonl")


def test_label_reward_grades_against_the_stored_label():
    assert label_reward(["\\boxed{4}", "\\boxed{3}", "\\boxed{4}"], ["4", "4", None], VERIFY) == [1.0, 0.0, None]


def test_label_rewards_need_the_spurious_recipe_labels():
    with pytest.raises(UserError, match="recipe=spurious with recipe.labels"):
        build_reward("majority_label", RewardContext(verify=VERIFY, recipe={}))

"""DAPO Eq. 13 at and around both window edges, by hand: L_max=20480, L_cache=4096
(window 16384..20480), and a small window (L_max=16, L_cache=4: window 12..16)."""

import pytest
from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.rewards import RewardContext, build_reward
from rlrecipes.rewards.overlong import overlong_penalty


@pytest.mark.parametrize(
    "length, expected",
    [
        (0, 0.0),
        (16383, 0.0),
        (16384, 0.0),  # lower edge: the last length without penalty
        (16385, -1 / 4096),  # first penalised token
        (18432, -0.5),  # middle of the window
        (20479, -4095 / 4096),
        (20480, -1.0),  # upper edge: the full budget
        (20481, -1.0),  # beyond the budget (cannot happen when generation is capped)
        (50000, -1.0),
    ],
)
def test_paper_window(length, expected):
    assert overlong_penalty(length, 20480, 4096) == pytest.approx(expected, abs=1e-12)


def test_small_window_steps_by_a_quarter():
    assert [overlong_penalty(n, 16, 4) for n in range(11, 18)] == [0.0, 0.0, -0.25, -0.5, -0.75, -1.0, -1.0]


def test_empty_window_only_punishes_beyond_the_budget():
    assert [overlong_penalty(n, 12, 0) for n in (11, 12, 13)] == [0.0, 0.0, -1.0]


@pytest.mark.parametrize("max_length, cache", [(16, 17), (16, -1), (0, 0)])
def test_bad_window_is_rejected(max_length, cache):
    with pytest.raises(ValueError):
        overlong_penalty(5, max_length, cache)


def ctx(buffer, max_length=16):
    return RewardContext(
        verify=lambda c, g: False,
        max_completion_length=max_length,
        recipe=OmegaConf.create({"overlong_buffer_length": buffer}),
    )


def test_reward_uses_token_counts_and_logs_the_penalised_share():
    logged = {}
    fn = build_reward("overlong", ctx(4))
    ids = [[1] * 10, [1] * 13, [1] * 16]
    out = fn(
        prompts=["p"] * 3, completions=["x"] * 3, completion_ids=ids, answer=[None] * 3, log_metric=logged.__setitem__
    )
    assert out == [0.0, -0.25, -1.0]
    assert logged == {"overlong/penalized_fraction": pytest.approx(2 / 3)}


def test_reward_rejects_a_window_larger_than_the_budget():
    with pytest.raises(UserError, match="overlong_buffer_length=20"):
        build_reward("overlong", ctx(20))

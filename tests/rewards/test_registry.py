"""The reward registry: one factory per name, and J1's rewards named like every other."""

import pytest

from rlrecipes.rewards import register_reward, reward_names, reward_scope


def test_a_second_reward_of_a_taken_name_is_refused():
    @register_reward("test_registry_once", needs_answer=False)
    def first(ctx):
        return lambda completions, **_: [0.0] * len(completions)

    register_reward("test_registry_once", needs_answer=False)(first)  # the same factory again: a re-import
    with pytest.raises(ValueError, match="reward 'test_registry_once' is registered twice"):

        @register_reward("test_registry_once", needs_answer=False)
        def second(ctx):
            return lambda completions, **_: [1.0] * len(completions)


def test_j1s_rewards_are_registered():
    assert {"verdict", "judge_format"} <= set(reward_names())
    assert reward_scope("verdict") == "group" and reward_scope("judge_format") == "completion"

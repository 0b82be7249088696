"""Correctness reward: 1 if the completion's answer matches the gold answer, else 0."""

from __future__ import annotations

from typing import Any

from rlrecipes.rewards import RewardContext, RewardFn, Verifier, register_reward


def accuracy_reward(
    completions: list[str],
    answer: list[Any],
    *,
    verify: Verifier,
    correct: float = 1.0,
    wrong: float = 0.0,
    **_: Any,
) -> list[float | None]:
    """`correct` where `verify(completion, gold)` holds, else `wrong`.

    Rows without a gold answer get None, so TRL leaves them out of this reward
    instead of treating them as wrong (the loader reports such rows; see data/).
    """
    return [
        None if gold is None else (correct if verify(text, gold) else wrong) for text, gold in zip(completions, answer)
    ]


@register_reward("accuracy")
def _accuracy(ctx: RewardContext) -> RewardFn:
    def reward(completions: list[str], answer: list[Any], **kw: Any) -> list[float | None]:
        return accuracy_reward(completions, answer, verify=ctx.verify)

    return reward

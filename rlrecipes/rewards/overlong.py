"""DAPO's soft overlong punishment (paper Eq. 13), added to the correctness reward.

A completion that runs into the last `cache_length` tokens of the generation budget
is penalised linearly, from 0 at `max_length - cache_length` tokens to -1 at
`max_length`; beyond the budget the penalty is -1. A length window, not a hard cut,
so the policy learns to stop before truncation without every long-but-correct answer
being treated as a failure. Lengths are in tokens, EOS included (verl's
`valid_response_length`; TRL's `completion_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlrecipes.errors import UserError
from rlrecipes.rewards import RewardContext, RewardFn, register_reward


def overlong_penalty(length: int, max_length: int, cache_length: int) -> float:
    """Eq. 13: 0 up to `max_length - cache_length`, linear to -1 at `max_length`, -1 beyond.

    >>> overlong_penalty(16384, 20480, 4096), overlong_penalty(18432, 20480, 4096)
    (0.0, -0.5)
    """
    if max_length < 1 or not 0 <= cache_length <= max_length:
        raise ValueError(f"need 0 <= cache_length ({cache_length}) <= max_length ({max_length}), max_length >= 1")
    expected = max_length - cache_length
    if length <= expected:
        return 0.0
    if length > max_length:
        return -1.0
    return (expected - length) / cache_length


@dataclass(frozen=True)
class OverlongParams:
    overlong_buffer_length: int  # L_cache: the penalty window, in tokens (DAPO Eq. 13)


@register_reward("overlong", needs_answer=False, params=OverlongParams)
def _overlong(ctx: RewardContext) -> RewardFn:
    """Soft overlong punishment over `trainer.max_completion_length` with window
    `recipe.overlong_buffer_length`; logs the share of completions inside the window."""
    cache = ctx.params.overlong_buffer_length
    max_length = ctx.max_completion_length
    if not 0 <= cache <= max_length:
        raise UserError(
            f"recipe.overlong_buffer_length={cache} must lie in [0, trainer.max_completion_length={max_length}]"
        )

    def reward(
        completions: list[str], completion_ids: list[list[int]], log_metric: Any = None, **kw: Any
    ) -> list[float]:
        penalties = [overlong_penalty(len(ids), max_length, cache) for ids in completion_ids]
        if log_metric is not None and penalties:
            log_metric("overlong/penalized_fraction", sum(p < 0 for p in penalties) / len(penalties))
        return penalties

    return reward

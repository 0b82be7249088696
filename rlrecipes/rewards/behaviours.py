"""The behaviour counter of Cognitive Behaviors (arXiv 2503.01307) as a monitor: add it with
weight 0 (`recipe.rewards=[{name: accuracy}, {name: behaviours, weight: 0}]`) and every step
logs `behaviours/<name>`, the share of that step's completions showing each of the four
behaviours (verification, backtracking, subgoal setting, backward chaining).

Rule-based, for the toy model's trace grammar (`rlrecipes.data.priming`); its value per
completion is the number of behaviours shown (0-4), logged as `rewards/behaviours/mean`.
"""

from __future__ import annotations

from typing import Any

from rlrecipes.data.priming import BEHAVIOURS, behaviours
from rlrecipes.rewards import RewardContext, RewardFn, register_reward


def behaviour_shares(completions: list[str]) -> dict[str, float]:
    """{behaviour: share of `completions` showing it}."""
    found = [behaviours(text) for text in completions]
    return {name: sum(f[name] for f in found) / len(found) for name in BEHAVIOURS} if found else {}


@register_reward("behaviours", needs_answer=False)
def _behaviours(ctx: RewardContext) -> RewardFn:
    def reward(completions: list[str], log_metric: Any = None, **kw: Any) -> list[float]:
        if log_metric is not None and completions:
            for name, share in behaviour_shares(completions).items():
                log_metric(f"behaviours/{name}", share)
        return [float(sum(behaviours(text).values())) for text in completions]

    return reward

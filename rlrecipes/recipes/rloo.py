"""RLOO: REINFORCE Leave-One-Out (Ahmadian et al., 2024, "Back to Basics", arXiv 2402.14740).

GRPO with one change, the advantage: each completion's reward minus the mean reward of the
*other* completions of its prompt,

    A_i = r_i - 1/(k-1) * sum_{j != i} r_j  =  k/(k-1) * (r_i - mean_group r)

with no division by a standard deviation (`engine/advantages.py rloo_advantages`, applied by
the engine's `EstimatedAdvantages` hook, so it works with any reward of `recipe.rewards`).
The authors released no training code; the formula follows OpenRLHF's `rloo` estimator
(openrlhf/trainer/ppo_utils/experience_maker.py l.264-266), which verl's
compute_rloo_outcome_advantage and TRL's RLOOTrainer share.

Everything else is this project's GRPO (RecipeConfig): the PPO-clipped surrogate, sequence-mean
loss. The paper's RLOO is on-policy REINFORCE with the KL term in the reward; here the KL term
(recipe.beta, off by default) is TRL's k3 in the loss, and one update per rollout step
(trainer.updates_per_rollout=1, the default) makes the clipped surrogate's gradient REINFORCE's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.estimators import EstimatedAdvantages, Estimator, check_advantage_settings
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext


@dataclass
class RLOOConfig(RecipeConfig):
    name: str = "rloo"


@register_recipe
class RLOO(Recipe):
    name = "rloo"
    paper = "RLOO (Ahmadian et al., 2024, arXiv 2402.14740)"
    idea = "Leave-one-out baseline: each reward minus the mean of the others in its group"
    config_cls = RLOOConfig
    own_fields: ClassVar[tuple[str, ...]] = ()
    progress_keys = ("rloo/baseline_mean",)

    @classmethod
    def validate(cls, cfg: Any) -> None:
        check_advantage_settings(cfg.recipe)

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        return [EstimatedAdvantages(Estimator.rloo)]

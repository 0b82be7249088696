"""Clip-Cov (Cui, Zhang, Chen et al., 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models", arXiv 2505.22617).

Entropy collapses because tokens with a high covariance between their log-probability and their
advantage dominate the update. Clip-Cov takes a few of them out of the gradient:

    Cov_t = (A_t - mean A) * (log pi_t - mean log pi)          over the valid tokens
    draw clip_cov_ratio x N tokens (at least 1) at random among those with
        clip_cov_lb < Cov_t < clip_cov_ub that PPO's clip left alone
    loss = PPO's clipped loss, times 0 on the drawn tokens

as the authors' `compute_policy_loss_clip_cov` does (PRIME-RL/Entropy-Mechanism-of-RL
verl/trainer/ppo/core_algos.py l.469-518), per micro-batch, with torch's global generator (a
seeded run draws the same tokens; a resumed run restores the generator). The engine's loss
hook (`engine/policy_objectives.py ClipCov`) computes it; the masks, KL term and aggregation around
it are the engine's, as for TRL's loss. Logged: `clip_cov/clipped_tokens`, the share cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.policy_loss import check_loss_settings
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext


@dataclass
class ClipCovConfig(RecipeConfig):
    name: str = "clip_cov"
    # the share of valid tokens whose gradient is cut (7b_clip_cov.sh l.19: 0.0002)
    clip_cov_ratio: float = 2e-4
    # the covariance window the cut tokens are drawn from, bounds excluded (l.20-21: 1, 5)
    clip_cov_lb: float = 1.0
    clip_cov_ub: float = 5.0


@register_recipe
class ClipCov(Recipe):
    name = "clip_cov"
    paper = "Clip-Cov (Cui et al., 2025, arXiv 2505.22617)"
    idea = "Cut the gradient of a few high-covariance tokens to keep entropy from collapsing"
    config_cls = ClipCovConfig
    own_fields: ClassVar[tuple[str, ...]] = ("clip_cov_ratio", "clip_cov_lb", "clip_cov_ub")
    progress_keys = ("clip_cov/clipped_tokens", "entropy")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        check_loss_settings(r)
        if not 0 < r.clip_cov_ratio <= 1:
            raise ConfigError(f"recipe.clip_cov_ratio={r.clip_cov_ratio} must be in (0, 1] (a share of the tokens)")
        if not r.clip_cov_lb < r.clip_cov_ub:
            raise ConfigError(
                f"recipe.clip_cov_lb={r.clip_cov_lb} must be below recipe.clip_cov_ub={r.clip_cov_ub} "
                "(the covariance window the cut tokens come from)"
            )

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.policy_objectives import ClipCov as ClipCovLoss

        r = self.cfg
        return [ClipCovLoss(float(r.clip_cov_ratio), float(r.clip_cov_lb), float(r.clip_cov_ub))]

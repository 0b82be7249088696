"""KL-Cov (Cui, Zhang, Chen et al., 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models", arXiv 2505.22617).

Entropy collapses because tokens with a high covariance between their log-probability and their
advantage dominate the update. KL-Cov holds those tokens near the rollout policy:

    Cov_t = (A_t - mean A) * (log pi_t - mean log pi)          over the valid tokens
    loss_t = -A_t * ratio_t + ppo_kl_coef * |log pi_t - log pi_old_t|   on the top
             kl_cov_ratio x N tokens by Cov_t (at least 1)
    loss_t = -A_t * ratio_t                                   on every other token

with no ratio clipping anywhere, as the authors' `compute_policy_loss_kl_cov` does
(PRIME-RL/Entropy-Mechanism-of-RL verl/trainer/ppo/core_algos.py l.426-467), per micro-batch.
The authors' `k_percent` is a percentage (0.2 in recipe/dapo/7b_kl_cov.sh l.54, read as
len x k / 100 by core_algos.py l.458): 0.2 % of the tokens, `kl_cov_ratio: 0.002` here. The penalty is
|log pi - log pi_old|, which is 0 on the first update of a rollout step; it acts from the
second (the script's 8 mini-batches per step, l.31-33). Logged: `kl_cov/penalised_tokens` and
`kl_cov/abs_log_ratio` (the authors' ppo_kl, the mean |log-ratio|). The engine's loss hook
(`engine/policy_objectives.py KLCov`) computes it.
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
class KLCovConfig(RecipeConfig):
    name: str = "kl_cov"
    # the share of valid tokens penalised, by covariance (7b_kl_cov.sh l.54: k_percent=0.2, a percentage)
    kl_cov_ratio: float = 0.002
    # beta, the weight of |log pi - log pi_old| on them (l.53: ppo_kl_coef=1)
    ppo_kl_coef: float = 1.0


@register_recipe
class KLCov(Recipe):
    name = "kl_cov"
    paper = "KL-Cov (Cui et al., 2025, arXiv 2505.22617)"
    idea = "Penalise |log-ratio| on the top-covariance tokens to keep entropy from collapsing"
    config_cls = KLCovConfig
    own_fields: ClassVar[tuple[str, ...]] = ("kl_cov_ratio", "ppo_kl_coef")
    progress_keys = ("kl_cov/penalised_tokens", "kl_cov/abs_log_ratio", "entropy")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        check_loss_settings(r)
        if not 0 < r.kl_cov_ratio <= 1:
            raise ConfigError(f"recipe.kl_cov_ratio={r.kl_cov_ratio} must be in (0, 1] (a share of the tokens)")
        if not r.ppo_kl_coef >= 0:
            raise ConfigError(f"recipe.ppo_kl_coef={r.ppo_kl_coef} must be at least 0")
        if r.epsilon != 0.2 or r.epsilon_high is not None:
            raise ConfigError(
                "recipe=kl_cov clips no ratio (the authors' compute_policy_loss_kl_cov): recipe.epsilon and "
                "recipe.epsilon_high are not read; leave them at 0.2 and null"
            )

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.policy_objectives import KLCov as KLCovLoss

        return [KLCovLoss(float(self.cfg.kl_cov_ratio), float(self.cfg.ppo_kl_coef))]

"""GMPO: Geometric-Mean Policy Optimization (Zhao et al., 2025, arXiv 2507.20673).

GRPO maximises the arithmetic mean of the token-level ratio x advantage; one token with an
extreme ratio moves it a lot. GMPO maximises their geometric mean, with each token's
log-ratio clipped (in log space, on the side PPO would clip):

    d_t  = log pi_t - log pi_old_t
    d'_t = min(d_t, c) if A >= 0,   max(d_t, -c) if A < 0          c = log_ratio_clip = 0.4
    loss = -A * exp(mean_t d'_t)                                   one value per completion

averaged over the completions, as the authors' code does (callsys/GMPO
train_zero_math_gmpo.py l.675-701: micro-batches of one sequence, `--cliprange 0.4`,
scripts/qwen2.5-math-7b-gmpo.sh l.20, 39), i.e. TRL's `grpo` aggregation (the only one
accepted). The engine's loss hook (`engine/policy_objectives.py GMPO`) computes it. Logged:
`gmpo/clipped_tokens`, the share of tokens whose log-ratio was clipped.
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
class GMPOConfig(RecipeConfig):
    name: str = "gmpo"
    # c: each token's ratio is clipped to (e^-c, e^c) (scripts/qwen2.5-math-7b-gmpo.sh l.20: CLIPRANGE=0.4)
    log_ratio_clip: float = 0.4


@register_recipe
class GMPO(Recipe):
    name = "gmpo"
    paper = "GMPO (Zhao et al., 2025, arXiv 2507.20673)"
    idea = "Geometric mean of the token ratios, clipped in log space: robust to outlier tokens"
    config_cls = GMPOConfig
    own_fields: ClassVar[tuple[str, ...]] = ("log_ratio_clip",)
    progress_keys = ("gmpo/clipped_tokens",)

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        check_loss_settings(r, loss_types=("grpo",))
        if not r.log_ratio_clip > 0:
            raise ConfigError(
                f"recipe.log_ratio_clip={r.log_ratio_clip} must be positive (ratios clipped to (e^-c, e^c))"
            )
        if r.epsilon != 0.2 or r.epsilon_high is not None:
            raise ConfigError(
                "recipe=gmpo clips the log-ratio with recipe.log_ratio_clip: recipe.epsilon and "
                "recipe.epsilon_high are not read; leave them at 0.2 and null"
            )

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.policy_objectives import GMPO as GMPOLoss

        return [GMPOLoss(float(self.cfg.log_ratio_clip))]

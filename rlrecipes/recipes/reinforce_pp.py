"""REINFORCE++-baseline (Hu, Liu, Xu, Shen, arXiv 2501.03262, "REINFORCE++ w/ Baseline"), as the
authors' OpenRLHF computes it (`--algo.advantage.estimator reinforce_baseline`,
openrlhf/trainer/ppo_utils/experience_maker.py l.267-268 and l.314-328):

    a_i = r_i - mean_group(r)                         group-mean baseline
    A_i = (a_i - mu) / sqrt(max(var, 1e-8))           mu, var over every valid token of the batch

(`engine/advantages.py reinforce_pp_advantages`, applied by the engine's `EstimatedAdvantages`
hook). The whitening is global: over the rollout batch of every process, each completion
weighted by its number of loss tokens, because OpenRLHF whitens the per-token advantages.

The loss: OpenRLHF's PolicyLoss, PPO-clipped at 0.2 (--actor.eps_clip, train_ppo_ray.py l.387)
with `token_level_loss` (openrlhf/models/loss.py l.29-32: the masked token sum over the
global token count), i.e. TRL's `dapo` aggregation. What differs from OpenRLHF:
- KL: OpenRLHF subtracts beta x KL from each token's reward before the returns unless
  --algo.kl.use_loss (the README's RLVR setting and its example script,
  examples/scripts/train_reinforce_baseline_hybrid_engine.sh l.87-89, use the loss with k2);
  here recipe.beta is TRL's k3 term in the loss, and a KL in the reward is not offered.
- Dynamic sampling is refused: the engine scores each generation round on its own, so the
  whitening would not be over the batch that trains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.estimators import EstimatedAdvantages, Estimator, check_advantage_settings
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext


@dataclass
class ReinforcePPConfig(RecipeConfig):
    name: str = "reinforce_pp"


@register_recipe
class ReinforcePP(Recipe):
    name = "reinforce_pp"
    paper = "REINFORCE++ (Hu et al., 2025, arXiv 2501.03262)"
    idea = "Group-mean baseline, then advantages whitened over the whole batch (REINFORCE++-baseline)"
    config_cls = ReinforcePPConfig
    own_fields: ClassVar[tuple[str, ...]] = ()
    progress_keys = ("reinforce_pp/whiten_mean", "reinforce_pp/whiten_std")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        check_advantage_settings(cfg.recipe)
        if cfg.recipe.dynamic_sampling.enabled:
            raise ConfigError(
                "recipe=reinforce_pp whitens its advantages over the whole rollout batch, which dynamic "
                "sampling assembles from several scored rounds; set recipe.dynamic_sampling.enabled=false"
            )

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        return [EstimatedAdvantages(Estimator.reinforce_pp)]

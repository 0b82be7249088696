"""Negative sample reinforcement (Zhu, Xia, Wei, Chen, Chen, Meng, NeurIPS 2025, "The Surprising
Effectiveness of Negative Reinforcement in LLM Reasoning", arXiv 2506.01347).

RLVR's objective split into reinforcing correct completions (PSR) and penalising wrong ones
(NSR), each with its own weight, with no baseline and no group statistic:

    A_i = +psr_weight  if completion i is correct (reward 1)
          -nsr_weight  if it is wrong (reward 0)

(`engine/advantages.py sample_reinforcement_advantages`, applied by the engine's
`EstimatedAdvantages` hook). The three objectives of the paper are settings of it:
NSR (this recipe's default) psr_weight=0, nsr_weight=1; PSR psr_weight=1, nsr_weight=0;
W-REINFORCE psr_weight=lambda (0.1 in the paper), nsr_weight=1. These are the advantages of
the authors' `compute_psr_nsr_outcome_advantage` (TianHongZXY/RLVR-Decomposed
verl/trainer/ppo/core_algos.py l.142-149: `positive`, `negative`, `weighted` with
positive_advantage_weight). The combined reward must be 0 or 1 (a run stops at its first
scoring, with one line, on any other value).

The paper writes the objectives as REINFORCE (-A log pi); the authors' code trains them with
verl's PPO loss: ratio clipped at 0.2 (verl 0.2 clip_ratio default), the token mean of
compute_policy_loss (core_algos.py l.362) per dynamic micro-batch, and verl's default entropy
bonus 0.001, which the script never overrides (ppo_trainer.yaml l.35). This recipe follows the
code: TRL's clipped surrogate, `dapo` aggregation, entropy_coef 0.001. With one update per
rollout step (updates_per_rollout=1) the ratio is 1 and the gradient is REINFORCE's.
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
class NSRConfig(RecipeConfig):
    name: str = "nsr"
    # lambda, the weight of positive sample reinforcement: 0 trains on wrong completions only
    # (NSR); 0.1 is W-REINFORCE (the paper's proposal, the README's recommended value)
    psr_weight: float = 0.0
    # the weight of negative sample reinforcement; 0 with psr_weight=1 is PSR alone
    nsr_weight: float = 1.0


@register_recipe
class NSR(Recipe):
    name = "nsr"
    paper = "NSR / W-REINFORCE (Zhu et al., 2025, arXiv 2506.01347)"
    idea = "Penalise wrong samples (NSR), optionally reinforce correct ones with weight lambda (W-REINFORCE)"
    config_cls = NSRConfig
    own_fields: ClassVar[tuple[str, ...]] = ("psr_weight", "nsr_weight")
    progress_keys = ("nsr/correct_fraction",)

    @classmethod
    def validate(cls, cfg: Any) -> None:
        r = cfg.recipe
        check_advantage_settings(r)
        for key in ("psr_weight", "nsr_weight"):
            if not r[key] >= 0:
                raise ConfigError(f"recipe.{key}={r[key]} must be at least 0 (a weight on the samples it reinforces)")
        if r.psr_weight == 0 and r.nsr_weight == 0:
            raise ConfigError("recipe.psr_weight=0 and recipe.nsr_weight=0 train on nothing; set one above 0")

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        return [EstimatedAdvantages(Estimator.nsr, float(self.cfg.psr_weight), float(self.cfg.nsr_weight))]

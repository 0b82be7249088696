"""MaxRL: Maximum Likelihood Reinforcement Learning (Tajwar, Zeng et al., 2026, arXiv 2602.02710).

GRPO with the group-centred reward divided by the group's mean instead of its standard
deviation, as the authors' verl code computes it (tajwarfahim/maxrl,
verl/trainer/ppo/core_algos.py compute_maxrl_outcome_advantage, l.437):

    A_i = (r_i - mean_group r) / (mean_group r + 1e-6)

(`engine/advantages.py maxrl_advantages`, applied by the engine's `EstimatedAdvantages` hook).
With 0/1 rewards the mean is the prompt's pass rate p: a correct answer to a hard prompt weighs
about 1/p, which makes the gradient that of the log pass rate truncated at the group size
(the paper's maximum-likelihood objective). Rewards must be >= 0 (a negative one stops the
run at its first scoring with one line).

The loss is the authors' verl default: PPO clip 0.2 (clip_ratio_low/high 0.2,
qwen3_experiments/run_qwen3_training.sh l.117-118) and `token-mean` per micro-batch
(verl/trainer/config/ppo_trainer.yaml l.234), TRL's `bnpo`. Not matched: verl's dual clip
(clip_ratio_c 3.0, ppo_trainer.yaml l.231) bounds the loss of negative-advantage tokens; TRL has
no dual clip.
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
class MaxRLConfig(RecipeConfig):
    name: str = "maxrl"


@register_recipe
class MaxRL(Recipe):
    name = "maxrl"
    paper = "MaxRL (Tajwar, Zeng et al., 2026, arXiv 2602.02710)"
    idea = "Group-centred reward divided by the group mean (pass rate): hard prompts weigh ~1/p"
    config_cls = MaxRLConfig
    own_fields: ClassVar[tuple[str, ...]] = ()
    progress_keys = ("maxrl/solved_groups", "maxrl/inverse_pass_rate")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        check_advantage_settings(cfg.recipe)

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        return [EstimatedAdvantages(Estimator.maxrl)]

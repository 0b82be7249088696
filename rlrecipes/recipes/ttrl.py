"""TTRL: Test-Time Reinforcement Learning (Zuo, Zhang et al., 2025, arXiv 2504.16084), paper §3;
the authors' verl code (examples/ttrl).

GRPO on unlabelled questions with a majority-vote reward:

    per prompt: sample N_vote responses (trainer.num_generations; the papers use 64)
    label = majority answer of the N_vote responses (rewards/majority.py)
    r_i = 1 if response i agrees with the label else 0, for every vote
    train on the first N_train responses of each prompt (recipe.n_train; 32 in the verl
    code, 16 in the v1 code), with group-normalised advantages over those N_train

The vote needs whole groups, so `majority_vote` is a group reward: the engine scores it on
the gathered batch whatever the number of processes (engine/group_rewards.py). Training on the first
N_train is the engine's `GroupSubset` capability, which drops the other rows and
recomputes the advantages and token count over the kept ones.

Gold answers, when the data has them, never reach the loss: they feed the accuracy
monitor (weight 0) and the paper's diagnostics, logged every step as
`ttrl/label_accuracy` (label == gold), `ttrl/reward_accuracy` (pseudo-reward == true
reward, over all votes) and `ttrl/majority_ratio` (share of votes the label got).

Vote rule: the TTRL code's exact-string `Counter`, where a missing answer can win
(majority.py); `recipe.vote=equivalence` groups answers by mathematical equivalence.
What TRL cannot match: the advantage eps is 1e-4 (verl 1e-6, OpenRLHF 1e-9), and the
reference / old log-probs are computed for all N_vote rows before the subset is taken.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Optional

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.grpo_args import plan_batches
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe, refuse_gdpo
from rlrecipes.rewards import RewardContext
from rlrecipes.rewards.majority import VoteParams, VoteRule

REWARD = "majority_vote"


@dataclass
class TTRLConfig(RecipeConfig):
    name: str = "ttrl"
    # Responses per prompt that train: the first n_train of the trainer.num_generations
    # votes, in generation order (the verl code votes 64 and trains 32, v1 trains 16 of 64;
    # the presets set both). null = the first train_fraction of them (4 of 8 at the CPU
    # scale); n_train = trainer.num_generations trains on every vote.
    n_train: Optional[int] = None
    train_fraction: float = 0.5
    vote: VoteRule = VoteParams.vote  # the authors' rule; equivalence is the switch


def trained_per_group(n_train: Optional[int], train_fraction: float, num_generations: int) -> int:
    """How many of each group's votes train (`recipe.n_train`, else the first fraction)."""
    return int(n_train) if n_train is not None else max(1, int(num_generations * train_fraction))


@register_recipe
class TTRL(Recipe):
    name = "ttrl"
    paper = "TTRL (Zuo, Zhang et al., 2025, arXiv 2504.16084)"
    idea = "Label-free RL on test questions: majority vote of N samples is the reward"
    config_cls = TTRLConfig
    own_fields = ("n_train", "train_fraction", "vote")
    progress_keys = ("ttrl/label_accuracy", "ttrl/reward_accuracy", "ttrl/majority_ratio")

    @classmethod
    def validate(cls, cfg: Any) -> None:
        refuse_gdpo(
            cfg, "ttrl", "recomputes advantages from its vote reward on the trained subset (engine/group_subset.py)"
        )
        r, groups = cfg.recipe, cfg.trainer.num_generations
        weights = {spec.name: float(spec.weight) for spec in r.rewards}
        if REWARD not in weights:
            raise ConfigError(f"recipe=ttrl needs the {REWARD!r} reward in recipe.rewards (got {sorted(weights)})")
        if weights.get("accuracy", 0.0) != 0:
            raise ConfigError(
                "recipe=ttrl trains without labels: give the accuracy reward weight 0 "
                "(it is logged as a monitor anyway)"
            )
        if r.n_train is None and not 0 < r.train_fraction <= 1:
            raise ConfigError(f"recipe.train_fraction={r.train_fraction} must be in (0, 1]")
        keep = trained_per_group(r.n_train, r.train_fraction, groups)
        if not 1 <= keep <= groups:
            raise ConfigError(
                f"recipe.n_train={keep} must be between 1 and trainer.num_generations={groups} "
                "(the samples drawn per prompt)"
            )
        if r.dynamic_sampling.enabled and keep != groups:  # dynamic sampling keeps and merges whole groups
            raise ConfigError(
                f"recipe.n_train={keep} (training on part of each group) cannot be combined with "
                f"recipe.dynamic_sampling.enabled=true; set recipe.n_train={groups} to train on every sample"
            )
        # the kept rows of each process's share must still split into its micro-steps (GroupSubset)
        plan = plan_batches(cfg.trainer, int(os.environ.get("WORLD_SIZE", "1")))
        local = plan.per_device_batch * plan.steps_per_generation
        if local % groups == 0 and (local // groups * keep) % plan.steps_per_generation:
            raise ConfigError(
                f"recipe.n_train={keep} leaves {local // groups * keep} completions per process, which do not "
                f"split into the {plan.steps_per_generation} micro-steps of a rollout; change recipe.n_train, "
                "trainer.prompts_per_rollout or trainer.micro_batch_size"
            )

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        from rlrecipes.engine.group_subset import GroupSubset

        return [GroupSubset(self.cfg.n_train, key="recipe.n_train", fraction=float(self.cfg.train_fraction))]

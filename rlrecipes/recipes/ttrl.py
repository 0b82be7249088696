"""TTRL: Test-Time Reinforcement Learning (Zuo, Zhang et al., 2025, arXiv 2504.16084), recipes.md §2.

GRPO on unlabelled questions with a majority-vote reward:

    per prompt: sample N_vote responses (trainer.num_generations; the papers use 64)
    label = majority answer of the N_vote responses (rewards/majority.py)
    r_i = 1 if response i agrees with the label else 0, for every vote
    train on the first N_train responses of each prompt (recipe.n_train; 32 in the verl
    code, 16 in the v1 code), with group-normalised advantages over those N_train

The vote needs whole groups, but TRL scores each process's slice, so the reward column
is filled after gathering (`MajorityVote`, a global-view hook). Training on the first
N_train is the engine's `GroupSubset` capability, which drops the other rows and
recomputes the advantages and token count over the kept ones.

Gold answers, when the data has them, never reach the loss: they feed the accuracy
monitor (weight 0) and the paper's diagnostics, logged every step as
`ttrl/label_accuracy` (label == gold), `ttrl/reward_accuracy` (pseudo-reward == true
reward, over all votes) and `ttrl/majority_ratio` (share of votes the label got).

Vote rule: answers grouped by mathematical equivalence; `recipe.vote=exact` is the
TTRL code's exact-string `Counter`, where a missing answer can win (majority.py).
What TRL cannot match: the advantage eps is 1e-4 (verl 1e-6, OpenRLHF 1e-9), and the
reference / old log-probs are computed for all N_vote rows before the subset is taken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch

from rlrecipes.config.schema import RecipeConfig
from rlrecipes.engine.hooks import EngineHook, RolloutView
from rlrecipes.errors import UserError
from rlrecipes.recipes import register_recipe
from rlrecipes.recipes.base import Recipe
from rlrecipes.rewards import RewardContext

VOTE_RULES = ("equivalence", "exact")
REWARD = "majority_vote"


@dataclass
class TTRLConfig(RecipeConfig):
    name: str = "ttrl"
    # Responses per prompt that train: the first n_train of the trainer.num_generations
    # votes, in generation order. null = train_fraction of them.
    n_train: Optional[int] = None
    train_fraction: float = 0.5
    vote: str = "equivalence"  # equivalence | exact (the TTRL code's string Counter)


class MajorityVote(EngineHook):
    """Writes TTRL's pseudo-reward column from the gathered groups and logs the diagnostics."""

    needs_global_view = True

    def __init__(self, ctx: RewardContext, exact: bool):
        self.ctx, self.exact = ctx, exact

    def transform_rewards(self, trainer: Any, rewards: torch.Tensor, view: RolloutView) -> torch.Tensor:
        from rlrecipes.rewards.majority import diagnostics, vote_rewards

        column = view.reward_names.index(REWARD)
        size = view.num_generations
        golds = view.columns.get("answer", [None] * len(view.completions))
        rewards = rewards.clone()
        votes = []
        for start in range(0, len(view.completions), size):
            group = vote_rewards(
                view.completions[start : start + size],
                style=self.ctx.answer_style,
                verify=self.ctx.verify,
                exact=self.exact,
                gold=golds[start],
            )
            rewards[start : start + size, column] = torch.tensor(group.rewards, dtype=rewards.dtype)
            votes.append(group)
        if trainer.model.training:
            for name, value in diagnostics(votes).items():
                trainer.log_metric(f"ttrl/{name}", value)
        return rewards


@register_recipe
class TTRL(Recipe):
    name = "ttrl"
    paper = "TTRL (Zuo, Zhang et al., 2025, arXiv 2504.16084)"
    idea = "Label-free RL on test questions: majority vote of N samples is the reward"
    config_cls = TTRLConfig
    progress_keys = ("ttrl/label_accuracy", "ttrl/reward_accuracy", "ttrl/majority_ratio")

    def reward_functions(self, ctx: RewardContext) -> list:
        rewards = super().reward_functions(ctx)
        names = [fn.__name__ for fn, _ in rewards]
        if REWARD not in names:
            raise UserError(f"recipe=ttrl needs the {REWARD!r} reward in recipe.rewards (got {names})")
        if "accuracy" in names and dict((fn.__name__, w) for fn, w in rewards)["accuracy"] != 0:
            raise UserError(
                "recipe=ttrl trains without labels: give the accuracy reward weight 0 "
                "(it is logged as a monitor anyway)"
            )
        return rewards

    def hooks(self, ctx: RewardContext) -> list[EngineHook]:
        if self.cfg.vote not in VOTE_RULES:
            raise UserError(f"recipe.vote={self.cfg.vote!r}; valid: {', '.join(VOTE_RULES)}")
        hooks: list[EngineHook] = [MajorityVote(ctx, exact=self.cfg.vote == "exact")]
        from rlrecipes.engine.group_subset import GroupSubset

        hooks.append(GroupSubset(self.cfg.n_train, key="recipe.n_train", fraction=float(self.cfg.train_fraction)))
        return hooks

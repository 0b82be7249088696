"""Advantage estimators other than GRPO's, as one engine hook any recipe can train with.

TRL scores a rollout batch and writes GRPO's group-normalised advantages; `EstimatedAdvantages`
replaces them, after scoring, with one of the estimators of `advantages.py`, computed from the
same combined rewards (TRL's weighted sum of `recipe.rewards`) over the whole batch of every
process, then sliced to this process's rows:

- `rloo`: r_i minus the mean of the other rewards of its group (leave-one-out);
- `reinforce_pp`: REINFORCE++-baseline, the group mean subtracted, then whitened over every
  valid token of the rollout batch;
- `maxrl`: (r_i - mean) / (mean + 1e-6) per group;
- `nsr`: +psr_weight for a correct completion, -nsr_weight for a wrong one (0/1 rewards).

Everything after the advantages is the recipe's loss (TRL's clipped surrogate with
`recipe.loss_type`, or a loss hook of `policy_loss.py`). TRL's own advantage settings
(`recipe.scale_rewards`) do not reach the loss then, so a recipe with an estimator refuses
any value but their default (`check_advantage_settings`), rather than ignore it.
Evaluation batches (`trainer.model.training` false) keep TRL's advantages: their loss is only
a monitor. torch and `advantages.py` are imported where they are used: recipes import this
module when they are declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rlrecipes.choice import Choice
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import ConfigError, UserError

if TYPE_CHECKING:
    import torch


class Estimator(Choice):
    """The advantage a recipe trains with instead of GRPO's (`EstimatedAdvantages`)."""

    rloo = "rloo"  # leave-one-out baseline (arXiv 2402.14740)
    reinforce_pp = "reinforce_pp"  # REINFORCE++-baseline (arXiv 2501.03262)
    maxrl = "maxrl"  # mean-normalised group advantage (arXiv 2602.02710)
    nsr = "nsr"  # positive / negative sample reinforcement (arXiv 2506.01347)


class EstimatedAdvantages(EngineHook):
    """Write `estimator`'s advantages into each scored training batch (see the module's docstring)."""

    def __init__(self, estimator: str, psr_weight: float = 0.0, nsr_weight: float = 1.0):
        if estimator not in Estimator.values():
            raise UserError(f"estimator={estimator!r}; valid: {Estimator.valid()}")
        self.estimator = estimator
        self.psr_weight, self.nsr_weight = float(psr_weight), float(nsr_weight)

    def bind(self, trainer: Any) -> None:
        # whitening is over the rollout batch that trains; dynamic sampling scores each
        # generation round on its own and keeps only some of its groups
        if self.estimator == Estimator.reinforce_pp and getattr(trainer, "dynamic_sampling", None) is not None:
            raise UserError(
                "recipe=reinforce_pp whitens its advantages over the whole rollout batch, which dynamic "
                "sampling assembles from several scored rounds; set recipe.dynamic_sampling.enabled=false"
            )

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        if not trainer.model.training:
            return batch
        from rlrecipes.engine.advantages import weighted_rewards

        total = weighted_rewards(rewards, trainer.reward_weights)
        local = batch["completion_ids"].size(0)
        start = trainer.accelerator.process_index * local
        advantages = self.estimate(trainer, batch, total)
        return {**batch, "advantages": advantages[start : start + local].to(batch["advantages"].device)}

    def estimate(self, trainer: Any, batch: dict[str, Any], total: torch.Tensor) -> torch.Tensor:
        """The advantages of the whole rollout batch (every process) from its combined rewards."""
        import torch

        from rlrecipes.engine.advantages import (
            maxrl_advantages,
            reinforce_pp_advantages,
            rloo_advantages,
            sample_reinforcement_advantages,
        )

        groups = trainer.num_generations
        scored = total[~torch.isnan(total)]
        if self.estimator == Estimator.rloo:
            advantages = rloo_advantages(total, groups)
            trainer.log_metric("rloo/baseline_mean", float((total - advantages).nanmean()))
        elif self.estimator == Estimator.reinforce_pp:
            mask = batch["completion_mask"] * batch["tool_mask"] if "tool_mask" in batch else batch["completion_mask"]
            tokens = trainer.accelerator.gather(mask.sum(dim=1).float()).to(total.device)
            advantages, mean, std = reinforce_pp_advantages(total, groups, tokens)
            trainer.log_metric("reinforce_pp/whiten_mean", mean)
            trainer.log_metric("reinforce_pp/whiten_std", std)
        elif self.estimator == Estimator.maxrl:
            if bool((scored < 0).any()):
                raise UserError(
                    f"recipe=maxrl divides by each group's mean reward, its pass rate: rewards must be >= 0 "
                    f"(got {float(scored.min()):g}); use a 0/1 reward such as accuracy"
                )
            advantages = maxrl_advantages(total, groups)
            means = total.reshape(-1, groups).nanmean(dim=1)
            solved = means[means > 0]
            trainer.log_metric("maxrl/solved_groups", float((means > 0).float().mean()))
            trainer.log_metric("maxrl/inverse_pass_rate", float((1 / solved).mean()) if solved.numel() else 0.0)
        else:
            if not bool(((scored == 0) | (scored == 1)).all()):
                odd = scored[(scored != 0) & (scored != 1)][0]
                raise UserError(
                    f"recipe=nsr reinforces correct (reward 1) and wrong (reward 0) completions: the combined "
                    f"reward must be 0 or 1 (got {float(odd):g}); use one 0/1 reward such as accuracy"
                )
            advantages = sample_reinforcement_advantages(total, self.psr_weight, self.nsr_weight)
            trainer.log_metric("nsr/correct_fraction", float((scored == 1).float().mean()) if scored.numel() else 0.0)
        return advantages

    def describe(self) -> str:
        if self.estimator == Estimator.nsr:
            return f"advantages: nsr (+{self.psr_weight:g} correct, -{self.nsr_weight:g} wrong)"
        return f"advantages: {self.estimator} (in place of TRL's group-normalised ones)"


def check_advantage_settings(recipe: Any) -> None:
    """One line for any setting of TRL's own advantage that an estimator would leave unread
    (called by the recipes' `validate`, before anything loads)."""
    name = recipe.name
    if recipe.scale_rewards != "group":
        raise ConfigError(
            f"recipe.scale_rewards={recipe.scale_rewards} does not apply to recipe={name}, whose advantages "
            "are its own estimator's; leave it at its default (group)"
        )
    aggregation = recipe.get("multi_objective_aggregation")
    if aggregation not in (None, "sum_then_normalize"):
        raise ConfigError(
            f"recipe.multi_objective_aggregation={aggregation} does not apply to recipe={name}, whose "
            "advantages come from the weighted sum of the rewards; leave it at sum_then_normalize"
        )

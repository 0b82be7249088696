"""Advantages from a per-completion score that needs a model's forward pass.

Some rewards are functions of the model, not of the text: INTUITOR's self-certainty
is computed from the policy's full-vocabulary logits on each completion. TRL's
reward functions see only strings, so this hook scores the already-tokenised batch
right after TRL has scored it, then writes group-normalised advantages:

    A = normalise_group(score) [+ TRL's advantage of the reward functions, only if any
        reward weight is non-zero, as INTUITOR's trainer adds them]

`scorer="online"` scores with the current policy (INTUITOR); `"offline"` with a frozen
copy of the initial model (the paper's reward-hacked ablation, §5.4), reusing TRL's
reference model when the KL term already loaded one.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import torch

from rlrecipes.engine.advantages import group_advantages
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError

# (model, scored batch, trainer) -> one score per local completion, shape [B_local]
ScoreFn = Callable[[Any, dict[str, Any], Any], torch.Tensor]
SCORERS = ("online", "offline")


class PolicyScoreAdvantage(EngineHook):
    def __init__(self, score: ScoreFn, name: str, scorer: str = "online"):
        if scorer not in SCORERS:
            raise UserError(f"scorer={scorer!r}; valid: {', '.join(SCORERS)}")
        self.score, self.name, self.scorer = score, name, scorer
        self.frozen: Any = None

    def bind(self, trainer: Any) -> None:
        if self.scorer == "offline":
            # Bound before the first update, so the copy holds the initial weights.
            source = trainer.ref_model if trainer.ref_model is not None else trainer.model
            self.frozen = copy.deepcopy(trainer.accelerator.unwrap_model(source)).eval()
            self.frozen.requires_grad_(False)

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        if not trainer.model.training:
            return batch
        from trl.models.utils import disable_gradient_checkpointing

        model = self.frozen if self.frozen is not None else trainer.accelerator.unwrap_model(trainer.model)
        # under the trainer's autocast, as TRL computes log-probs (bf16 runs score in bf16)
        with torch.no_grad(), disable_gradient_checkpointing(model, trainer.args.gradient_checkpointing_kwargs), \
                trainer.accelerator.autocast():
            local = self.score(model, batch, trainer).float()
        scores = trainer.accelerator.gather(local)
        advantages = group_advantages(scores, trainer.num_generations, trainer.scale_rewards)
        start = trainer.accelerator.process_index * local.numel()
        advantages = advantages[start : start + local.numel()].to(batch["advantages"].device)
        if bool((trainer.reward_weights != 0).any()):
            advantages = advantages + batch["advantages"]
        trainer.log_metric(f"{self.name}/mean", scores.mean().item())
        trainer.log_metric(f"{self.name}/std", scores.std().item() if scores.numel() > 1 else 0.0)
        return {**batch, "advantages": advantages}

"""How far each optimiser step moves the policy itself: `policy_shift`, the mean per-token
KL(π_before ‖ π_after) of the step on its own last micro-batch, in nats, logged every step.

Why: `update_ratio` (update_size.py) says how far the weights moved, but what a step may safely
move depends on the model (a 7B model at 1e-6 moves its weights ~1e-5 a step, a toy at 1e-3
~1e-3). What the step did to the *policy* is in nats per token on every model, the quantity
trust-region methods bound (TRPO's δ, Schulman et al. 2015, Eq. 12; PPO's `target_kl`). Nats alone
did not give one bar across models (a toy's healthy steps move up to ~0.01, SmolLM2 with LoRA's up to 0.09),
so the doctor's step-size check compares it with the policy's own entropy (doctor/thresholds.py).

The micro-batch's completions were sampled from the policy before the step (num_iterations=1), so
the k3 estimator (Schulman 2020, "Approximating KL divergence") is unbiased and never negative:

    KL(π_before ‖ π_after) ≈ mean over completion tokens of  (r − 1) − log r,   r = π_after/π_before

The "before" log-probs are the training forward's own on that micro-batch (`seen`, called from the
trainer's log-prob pass inside `compute_loss`): the weights do not change between it and the
optimiser step, so a second pass would compute the same numbers. The one extra pass is the "after",
without gradient, in the loss's own precision context (`compute_loss_context_manager`, as the training
forward ran). Where the model has dropout (LoRA's, or a config's), the training forward is noisy, so
"before" is a pass of its own without gradient just before the step (`on_pre_optimizer_step`), both
passes in eval mode, so dropout adds no shift of its own. Tool results are left out (tool_mask), as in
TRL's loss. `trainer.policy_shift_every=N` probes every N-th step (0: never).
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from transformers import TrainerCallback

# the batch entries TRL's log-prob pass takes besides the tokens (vision models); passed when present
EXTRA_INPUTS = (
    "pixel_values",
    "image_grid_thw",
    "num_images",
    "pixel_attention_mask",
    "spatial_shapes",
    "num_tiles",
    "image_sizes",
    "token_type_ids",
    "mm_token_type_ids",
    "image_position_ids",
)


def k3_kl(before: torch.Tensor, after: torch.Tensor, mask: torch.Tensor) -> Optional[float]:
    """Mean over the tokens where `mask` is 1 of (r − 1) − log r, r = exp(after − before): the k3
    estimate of KL(π_before ‖ π_after) from per-token log-probs of tokens sampled from π_before.
    None when no token counts."""
    total, tokens = k3_sum(before, after, mask)
    return float(total / tokens) if tokens else None


def k3_sum(before: torch.Tensor, after: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(sum of (r − 1) − log r over the tokens where `mask` is 1, their count), float64."""
    weight = mask.to(torch.float64)
    log_ratio = after.to(torch.float64) - before.to(torch.float64)
    per_token = torch.expm1(log_ratio) - log_ratio  # expm1: exact for the tiny ratios of a small step
    return torch.stack([(per_token * weight).sum(), weight.sum()])


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether a training forward of `model` is random: a dropout module with p > 0 (LoRA's
    lora_dropout, GPT-2's), or a config rate (`attention_dropout`, `*_pdrop`) applied functionally
    in the forward, as Llama's and Qwen's attention does."""
    if any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules()):
        return True
    configs = [m.config for m in model.modules() if hasattr(m, "config") and hasattr(m.config, "to_dict")]
    return any(_rates(config.to_dict()) for config in configs)


def _rates(values: dict[str, Any]) -> bool:
    for name, value in values.items():
        if isinstance(value, dict) and _rates(value):  # a composite model's text_config, vision_config
            return True
        if isinstance(name, str) and ("dropout" in name or "pdrop" in name) and isinstance(value, float) and value > 0:
            return True
    return False


class PolicyShift(TrainerCallback):
    """Logs `policy_shift` with the step's metrics (RecipeGRPOTrainer.log_metric)."""

    def __init__(self, trainer: Any, every: int):
        self.trainer = trainer
        self.every = every
        self.batch: Optional[dict[str, Any]] = None  # the step's last micro-batch (RecipeGRPOTrainer.compute_loss)
        self.before: Optional[torch.Tensor] = None
        self.seen_logps: Optional[torch.Tensor] = None  # the training forward's log-probs on `batch`
        self.watching = False
        self._random_forward: Optional[bool] = None  # has_dropout(model), asked once

    def due(self, step: int) -> bool:
        """Whether the optimiser step that follows `step` steps done is probed (the first one always)."""
        return self.every > 0 and (step == 0 or (step + 1) % self.every == 0)

    def remember(self, inputs: dict[str, Any]) -> None:
        self.watching = False
        if self.due(self.trainer.state.global_step):
            self.batch, self.seen_logps = inputs, None
            if self._random_forward is None:
                self._random_forward = has_dropout(self.trainer.model)
            self.watching = not self._random_forward

    def seen(self, logps: torch.Tensor) -> None:
        """The training forward's per-token log-probs (the trainer's log-prob pass): kept as
        "before" when they are the remembered micro-batch's (its first pass in `compute_loss`)."""
        if self.watching and self.batch is not None and logps.shape == self.batch["completion_ids"].shape:
            self.seen_logps, self.watching = logps.detach(), False

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.watching = False
        if self.batch is None:
            self.before = None
        elif self.seen_logps is not None:  # no dropout: the weights have not moved since that forward
            self.before = self.seen_logps
        else:
            self.before = self.log_probs()
        self.seen_logps = None

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch, before = self.batch, self.before
        self.batch = self.before = None
        if batch is None or before is None or self.trainer.accelerator.optimizer_step_was_skipped:
            return
        after = self.log_probs(batch)
        mask = batch["completion_mask"] * batch["tool_mask"] if "tool_mask" in batch else batch["completion_mask"]
        sums = self.trainer.accelerator.reduce(k3_sum(before, after, mask), reduction="sum")  # every process's
        if float(sums[1]) > 0:
            self.trainer.log_metric("policy_shift", float(sums[0]) / float(sums[1]))

    def log_probs(self, batch: Optional[dict[str, Any]] = None) -> torch.Tensor:
        """Per-token log-probs of the batch's completions under the current weights."""
        trainer, batch = self.trainer, batch if batch is not None else self.batch
        model = trainer.model_wrapped  # the DDP/FSDP/DeepSpeed wrapper: a sharded model gathers its weights
        completion_ids = batch["completion_ids"]
        extras = {key: batch[key] for key in EXTRA_INPUTS if batch.get(key) is not None}
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad(), trainer.compute_loss_context_manager():  # the training forward's precision
                logps, _, _ = trainer._get_per_token_logps_and_entropies(
                    model,
                    torch.cat([batch["prompt_ids"], completion_ids], dim=1),
                    torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1),
                    completion_ids.size(1),
                    batch_size=trainer.args.per_device_train_batch_size,
                    **extras,
                )
        finally:
            model.train(was_training)
        return logps

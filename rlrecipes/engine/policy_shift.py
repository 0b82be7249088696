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

The "before" log-probs are the loss's own forward on that micro-batch (`seen`, called from the
trainer's log-prob pass inside `compute_loss`): the weights do not change between it and the
optimiser step, so a second pass would compute the same numbers. The one extra pass is the "after",
without gradient, in eval mode. On the first probed step an eval-mode "before" is taken too, before
the loss (`remember`), and the capture stands for it only if the two lie within CAPTURE_NOISE_NATS
(a forward random or different in training mode, as MoE router jitter or Mamba's training kernel
make it, does not). Where the model has dropout (LoRA's, or a config's), or the check failed,
"before" is that eval-mode pass, taken on every probed step before the loss (DeepSpeed steps its
optimiser inside the last backward, before any callback), so dropout adds no shift of its own.
Tool results are left out (tool_mask), as in TRL's loss. `trainer.policy_shift_every=N` probes
every N-th step (0: never).

`trainer.policy_shift_rows=K` makes the eval-mode passes take K rows of the micro-batch, evenly
spaced (row ⌊i·n/K⌋ of its n; default 0: all of them). TRL shuffles a rollout's completions before
it cuts them into micro-batches (`shuffle_sequence_dict`), so those rows are a random draw, each
sampled from π_before: the estimate stays unbiased, but the mean KL of a few completions is
right-skewed, and the doctor's step-size check, a median over 8 steps whose thresholds were set on
every row (doctor/thresholds.py), then reads it lower and finds a too-large step later or not at
all. So every row is the default; a cap is for a micro-batch so large that one more pass over it
costs too much. (On the CPU toy, whose whole 64-completion rollout is one micro-batch, the pass is
over the step's whole batch; a model trained in several micro-batches a step pays it on one of them.
benchmarks/results/engine_overhead.json measures `rlrecipes train`, the probe on, against plain
TRL.) A batch with image inputs is probed whole: its image tensors are not laid out a row a completion.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from transformers import TrainerCallback

from rlrecipes.engine.dropout import has_dropout

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
# those laid out by image or patch, not a row a completion: a batch with any is not cut into rows
IMAGE_INPUTS = tuple(key for key in EXTRA_INPUTS if key not in ("token_type_ids", "mm_token_type_ids"))


def k3_kl(before: torch.Tensor, after: torch.Tensor, mask: torch.Tensor) -> Optional[float]:
    """Mean over the tokens where `mask` is 1 of (r − 1) − log r, r = exp(after − before): the k3
    estimate of KL(π_before ‖ π_after) from per-token log-probs of tokens sampled from π_before.
    None when no token counts."""
    total, tokens = k3_sum(before, after, mask)
    return float(total / tokens) if tokens else None


def k3_sum(before: torch.Tensor, after: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(sum of (r − 1) − log r over the tokens where `mask` is 1, their count), float64."""
    if before.shape != after.shape:  # broadcasting would count some tokens twice
        raise ValueError(f"log-probs of shapes {tuple(before.shape)} and {tuple(after.shape)} do not pair up")
    weight = mask.to(torch.float64)
    log_ratio = after.to(torch.float64) - before.to(torch.float64)
    per_token = torch.expm1(log_ratio) - log_ratio  # expm1: exact for the tiny ratios of a small step
    return torch.stack([(per_token * weight).sum(), weight.sum()])


# How far the loss's forward may lie from an eval-mode pass on the same weights for it to stand for
# "before": 1e-5 nats a token, 1/2000 of the doctor's step-size floor
# (thresholds.POLICY_SHIFT_MIN_NATS) and 1/250 of the smallest steps thresholds.py notes (cold sampling
# at the toy's rate, ~0.0025). On the CPU toy the two agree (the integration test's logged shift matches two separate
# passes to 1e-6 relative); a forward that is random in training mode (MoE router jitter)
# or takes another kernel there (Mamba's training branch) lies far above it.
CAPTURE_NOISE_NATS = 1e-5


class PolicyShift(TrainerCallback):
    """Logs `policy_shift` with the step's metrics (RecipeGRPOTrainer.log_metric)."""

    def __init__(self, trainer: Any, every: int, rows: int = 0):
        self.trainer = trainer
        self.every = every
        self.rows = rows  # the most rows of the micro-batch the passes take (0: all)
        # the probed rows of the step's last micro-batch (RecipeGRPOTrainer.compute_loss), and where
        # they lie in it (None: every row)
        self.batch: Optional[dict[str, Any]] = None
        self.index: Optional[torch.Tensor] = None
        self.full_shape: Optional[torch.Size] = None  # the whole micro-batch's completion_ids: the loss forward's
        self.before: Optional[torch.Tensor] = None
        self.seen_logps: Optional[torch.Tensor] = None  # the training forward's log-probs on `batch`
        self.check: Optional[torch.Tensor] = None  # an eval-mode "before", to check the first capture against
        self.watching = False
        # whether the loss's forward cannot stand for "before": None until known (has_dropout, then
        # the first probed step's check), the same on every process (a sharded forward is collective)
        self._random_forward: Optional[bool] = None

    def due(self, step: int) -> bool:
        """Whether the optimiser step that follows `step` steps done is probed (the first one always)."""
        return self.every > 0 and (step == 0 or (step + 1) % self.every == 0)

    def remember(self, inputs: dict[str, Any]) -> None:
        """A micro-batch about to go through the loss (RecipeGRPOTrainer.compute_loss): on a probed
        step's last one (the one the optimiser step follows), the batch the step is measured on."""
        self.watching = False
        trainer = self.trainer
        if not trainer.model.training or not self.due(trainer.state.global_step):
            return  # an evaluation's loss, or a step not probed
        if not getattr(trainer.accelerator, "sync_gradients", True):
            return  # an earlier micro-batch of the step: a later one is measured
        self.index = probed_rows(inputs, self.rows)
        self.full_shape = inputs["completion_ids"].shape
        self.batch = inputs if self.index is None else rows_of(inputs, self.index)
        self.seen_logps, self.before, self.check = None, None, None
        if self._random_forward is None and has_dropout(trainer.model):
            self._random_forward = True
        if self._random_forward:
            # its own pass, now: before the loss (DeepSpeed steps its optimiser inside the last backward)
            self.before = self.log_probs()
            return
        if self._random_forward is None:
            self.check = self.log_probs()  # once: does the loss's forward equal an eval pass?
        self.watching = True

    def seen(self, logps: torch.Tensor) -> None:
        """The log-probs of a log-prob pass of the trainer: kept as "before" when they are the loss's
        forward on the remembered micro-batch (the first pass with gradients while watching)."""
        if not (self.watching and self.batch is not None and torch.is_grad_enabled() and logps.requires_grad):
            return
        if logps.shape == self.full_shape:
            seen = logps.detach()
            self.seen_logps, self.watching = seen if self.index is None else seen[self.index.to(seen.device)], False

    def stop_watching(self) -> None:
        self.watching = False

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.watching = False
        seen, check = self.seen_logps, self.check
        self.seen_logps = self.check = None
        if self.batch is None or self.before is not None:
            return  # not probed, or "before" taken already (a model with dropout)
        if seen is None:  # no pass was captured (a loss path without the trainer's log-prob pass)
            self.before = check if check is not None else self.log_probs()
            return
        self.before = seen  # the weights have not moved since that forward
        if check is not None:
            noise = self.trainer.accelerator.reduce(k3_sum(check, seen, self.mask(self.batch)), reduction="sum")
            self._random_forward = float(noise[1]) > 0 and float(noise[0]) / float(noise[1]) > CAPTURE_NOISE_NATS
            if self._random_forward:
                self.before = check

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        batch, before = self.batch, self.before
        self.batch = self.before = None
        if batch is None or before is None or self.trainer.accelerator.optimizer_step_was_skipped:
            return
        after = self.log_probs(batch)
        sums = self.trainer.accelerator.reduce(k3_sum(before, after, self.mask(batch)), reduction="sum")  # all
        if float(sums[1]) > 0:
            self.trainer.log_metric("policy_shift", float(sums[0]) / float(sums[1]))

    @staticmethod
    def mask(batch: dict[str, Any]) -> torch.Tensor:
        """The completion tokens the model wrote (tool results left out, as in TRL's loss)."""
        return batch["completion_mask"] * batch["tool_mask"] if "tool_mask" in batch else batch["completion_mask"]

    def log_probs(self, batch: Optional[dict[str, Any]] = None) -> torch.Tensor:
        """Per-token log-probs of the batch's completions (the probed rows) under the current
        weights, in eval mode, in one pass as the loss's forward takes its micro-batch."""
        trainer, batch = self.trainer, batch if batch is not None else self.batch
        model = trainer.model_wrapped  # the DDP/FSDP/DeepSpeed wrapper: a sharded model gathers its weights
        completion_ids = batch["completion_ids"]
        extras = {key: batch[key] for key in EXTRA_INPUTS if batch.get(key) is not None}
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad(), trainer.compute_loss_context_manager():  # the loss's own context
                logps, _, _ = trainer._get_per_token_logps_and_entropies(
                    model,
                    torch.cat([batch["prompt_ids"], completion_ids], dim=1),
                    torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1),
                    completion_ids.size(1),
                    **extras,
                )
        finally:
            model.train(was_training)
        return logps


def probed_rows(batch: dict[str, Any], cap: int) -> Optional[torch.Tensor]:
    """`cap` rows of the micro-batch, evenly spaced: row ⌊i·n/cap⌋ for i < cap (None: every row,
    where `cap` is 0 or the batch holds no more, or the batch carries image inputs)."""
    n = batch["completion_ids"].size(0)
    if cap <= 0 or n <= cap or any(batch.get(key) is not None for key in IMAGE_INPUTS):
        return None
    return torch.arange(cap, device=batch["completion_ids"].device) * n // cap


def rows_of(batch: dict[str, Any], index: torch.Tensor) -> dict[str, Any]:
    """The batch's entries at rows `index`: each tensor a row a completion; anything else as it is."""
    n = batch["completion_ids"].size(0)
    return {
        key: value[index.to(value.device)]
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.size(0) == n
        else value
        for key, value in batch.items()
    }

"""Train on a fixed subset of each group: the first `keep` of its `num_generations` rows.

TTRL votes with 64 samples per prompt but trains on the first 32 (TTRL, Zuo, Zhang et al. 2025, §3 and its verl code):
every sample shapes the reward, only the subset enters the loss. Any recipe can ask
for this with `GroupSubset(keep)` in its hooks.

Design choice: the rows outside the subset are *dropped* from this process's scored
batch, not masked. Masking (completion_mask = 0) would still run the forward and
backward pass on them in every optimizer step, doubling the training compute of
TTRL's 64->32 setting for nothing. Dropping is safe with TRL's buffering because TRL
splits whatever the scoring step returns into `steps_per_generation` equal slices;
`bind` checks that the kept rows divide evenly, so no row is silently cut off.

What changes, and why:
- advantages are recomputed over the kept rows only (the group baseline and std of
  the subset, as TTRL's verl code does after `_select_top_k_per_prompt`), from TRL's
  weighted rewards with TRL's normaliser (advantages.py). Place this hook before any
  hook that edits advantages itself.
- `num_items_in_batch` (the token count `loss_type="dapo"` divides by) is recounted
  over the kept rows of all processes.
- tensors already computed for every row (reference / old log-probs) are subset too;
  their forward passes did run on the dropped rows (TRL computes them before rewards).
"""

from __future__ import annotations

from typing import Any

import torch

from rlrecipes.engine.advantages import group_advantages, weighted_rewards
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError


class GroupSubset(EngineHook):
    """Keep the first `keep` rows of each group; `keep=None` keeps `fraction` of the group
    (known only at bind time, from trainer.num_generations)."""

    def __init__(self, keep: int | None, key: str = "keep", fraction: float = 1.0):
        self.keep = None if keep is None else int(keep)
        self.key, self.fraction = key, fraction  # key: the config key users set, for error messages

    def bind(self, trainer: Any) -> None:
        groups, args = trainer.num_generations, trainer.args
        if self.keep is None:
            self.keep = max(1, int(groups * self.fraction))
        if getattr(trainer, "dynamic_sampling", None) is not None and self.keep != groups:
            # dynamic sampling selects and merges whole groups of num_generations rows
            raise UserError(
                f"{self.key}={self.keep} (training on part of each group) cannot be combined with "
                f"recipe.dynamic_sampling.enabled=true; set {self.key}={groups} to train on every sample"
            )
        if not 1 <= self.keep <= groups:
            raise UserError(
                f"{self.key}={self.keep} must be between 1 and trainer.num_generations={groups} "
                "(the samples drawn per prompt)"
            )
        local = args.per_device_train_batch_size * args.steps_per_generation
        if local % groups:
            raise UserError(
                f"each process scores {local} completions, not a whole number of groups of "
                f"{groups}; make trainer.prompts_per_rollout a multiple of the process count"
            )
        kept = local // groups * self.keep
        if kept % args.steps_per_generation:
            raise UserError(
                f"{self.key}={self.keep} leaves {kept} completions per process, which do not split into the "
                f"{args.steps_per_generation} micro-steps of a rollout; change {self.key}, "
                "trainer.prompts_per_rollout or trainer.micro_batch_size"
            )

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        groups = trainer.num_generations
        if not trainer.model.training or self.keep == groups:
            return batch
        local = batch["completion_ids"].size(0)
        start = trainer.accelerator.process_index * local
        keep = torch.arange(rewards.size(0), device=rewards.device) % groups < self.keep
        total = weighted_rewards(rewards, trainer.reward_weights)
        advantages = group_advantages(total, groups, trainer.scale_rewards, keep)[start : start + local]
        rows = keep[start : start + local].nonzero(as_tuple=True)[0]
        out = take_rows(batch, rows.to(batch["completion_ids"].device), local)
        out["advantages"] = advantages.to(batch["advantages"].device)[rows]
        loss_mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        out["num_items_in_batch"] = trainer.accelerator.gather(loss_mask.sum()).sum()
        return out


def take_rows(batch: dict[str, Any], rows: torch.Tensor, num_rows: int) -> dict[str, Any]:
    """`batch` with only `rows` kept in every per-row entry (tensors and lists of length `num_rows`)."""
    if "pixel_values" in batch:
        raise UserError("training on a subset of each group is not supported for image inputs")
    out: dict[str, Any] = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.size(0) == num_rows:
            out[key] = value[rows]
        elif isinstance(value, list) and len(value) == num_rows:
            out[key] = [value[i] for i in rows.tolist()]
        else:
            out[key] = value
    return out

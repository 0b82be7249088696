"""Named extension points of the engine. Recipes supply hooks; the engine calls them.

A hook overrides only the methods it needs:

- `after_scoring`: edits TRL's scored batch for this process (advantages, masks) after
  rewards and advantages exist. Policy-aware rewards (self-certainty), train-on-a-
  subset (TTRL) and per-example accuracy histories (one-shot RLVR) live here.
- `wrap_sampler`: wraps the training sampler, e.g. to keep the rows of a preference pair in
  one rollout batch (J1, `paired_batches.KeepRowsTogether`).
- `policy_loss`: the per-token policy loss in place of TRL's clipped surrogate (Clip-Cov,
  KL-Cov, GMPO: `policy_loss.py`); the engine adds the masks, the KL term and the
  aggregation of `recipe.loss_type` around it. At most one hook of a run supplies one.
- `describe`: this hook's settings, one line, for `rlrecipes train --dry-run`.
- `trains_policy`: False for a rollout step in which the policy must not move (PPO's critic
  warm-up, `critic.py`): no gradient reaches it and its optimizer leaves it as it is.
- `state_dict` / `load_state_dict`: what an exact resume must restore; `save_files` /
  `load_files`: what is too large for the engine state (PPO's critic and its optimizer),
  written into the checkpoint folder itself.

Rewards that need whole groups (TTRL's majority vote, J1's verdict) are group rewards
(`rlrecipes.rewards`, scored on the gathered batch by `group_rewards.py`), not hooks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from rlrecipes.errors import UserError


class EngineHook:
    def bind(self, trainer: Any) -> None:
        """Called once the trainer exists (e.g. to keep a handle on the policy)."""

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        """Return this process's scored batch, possibly modified; `rewards` is the global tensor."""
        return batch

    def wrap_sampler(self, sampler: Any) -> Any:
        """Return the training sampler, possibly wrapped (called once, when training starts)."""
        return sampler

    def policy_loss(self, trainer: Any, batch: Any) -> Any:
        """The per-token policy loss of this micro-batch, shape (B, T) or (B, 1), from `batch`
        (a `policy_loss.TokenBatch`: current and old log-probs, advantages, loss mask); None
        (the default) leaves the loss to TRL. Called once per micro-batch, with gradients."""
        return None

    def describe(self) -> str:
        """This hook's settings as `--dry-run` shows them ('' shows nothing)."""
        return ""

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must keep for an exact resume (a hook that accumulates returns it)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned, when a run resumes from a checkpoint."""

    def trains_policy(self) -> bool:
        """False while the policy must not be updated (this rollout step trains a hook's own model only)."""
        return True

    def save_files(self, folder: Path) -> None:
        """Write this hook's large state (weights, optimizer moments) into checkpoint `folder`, on the main
        process, before the checkpoint is marked complete: safetensors, or torch files of tensors and plain
        values (read back with `weights_only=True`)."""

    def load_files(self, folder: Path) -> None:
        """Read back what `save_files` wrote, on every process, when a run resumes from `folder`."""


def reward_column(names: Sequence[str], name: str, setting: str) -> int:
    """The column of reward `name` in the reward tensors (TRL's `reward_func_names` order);
    `setting` is the key that asked for it, named in the one-line error when the run has
    no such reward."""
    if name not in names:
        raise UserError(f"{setting}={name!r} is not a reward of this run; valid: {', '.join(names)}")
    return list(names).index(name)

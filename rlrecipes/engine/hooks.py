"""Named extension points of the engine. Recipes supply hooks; the engine calls them.

A hook overrides only the methods it needs:

- `after_scoring`: edits TRL's scored batch for this process (advantages, masks) after
  rewards and advantages exist. Policy-aware rewards (self-certainty), train-on-a-
  subset (TTRL) and per-example accuracy histories (one-shot RLVR) live here.
- `wrap_sampler`: wraps the training sampler, e.g. to keep the rows of a preference pair in
  one rollout batch (J1, `paired_batches.KeepRowsTogether`).
- `state_dict` / `load_state_dict`: what an exact resume must restore.

Rewards that need whole groups (TTRL's majority vote, J1's verdict) are group rewards
(`rlrecipes.rewards`, scored on the gathered batch by `group_rewards.py`), not hooks.
"""

from __future__ import annotations

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

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must keep for an exact resume (a hook that accumulates returns it)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what `state_dict` returned, when a run resumes from a checkpoint."""


def reward_column(names: Sequence[str], name: str, setting: str) -> int:
    """The column of reward `name` in the reward tensors (TRL's `reward_func_names` order);
    `setting` is the key that asked for it, named in the one-line error when the run has
    no such reward."""
    if name not in names:
        raise UserError(f"{setting}={name!r} is not a reward of this run; valid: {', '.join(names)}")
    return list(names).index(name)

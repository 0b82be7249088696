"""Named extension points of the engine. Recipes supply hooks; the engine calls them.

A hook overrides only the methods it needs:

- `transform_rewards`: sees the rewards of the *whole* rollout batch (all processes,
  groups intact) with the gathered completions and dataset columns, and may replace
  reward columns. Group-aware rewards (TTRL's majority vote) live here.
- `after_scoring`: edits TRL's scored batch for this process (advantages, masks) after
  rewards and advantages exist. Policy-aware rewards (self-certainty), train-on-a-
  subset (TTRL) and per-example accuracy histories (one-shot RLVR) live here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from rlrecipes.errors import UserError


@dataclass
class RolloutView:
    """The whole rollout batch as every process sees it after gathering."""

    prompts: list[Any]
    completions: list[str]
    columns: dict[str, list[Any]]  # dataset columns, one entry per completion
    num_generations: int
    reward_names: list[str]


class EngineHook:
    needs_global_view: bool = False  # True: the engine gathers completions for transform_rewards

    def bind(self, trainer: Any) -> None:
        """Called once the trainer exists (e.g. to keep a handle on the policy)."""

    def transform_rewards(self, trainer: Any, rewards: Any, view: RolloutView) -> Any:
        """Return the (N_global, n_reward_funcs) reward tensor, possibly modified."""
        return rewards

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        """Return this process's scored batch, possibly modified; `rewards` is the global tensor."""
        return batch

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

"""Group rewards under TRL: scored on whole groups, whatever the number of processes.

TRL calls every reward function on each process's slice of the rollout batch, where a
prompt's group may be split between processes. A group reward (`rewards.GroupReward`:
TTRL's majority vote, J1's position consistency) is handed to TRL wrapped in
`GatheredGroupReward`: every process gathers all slices (TRL calls the reward functions in
the same order on every process, so the gather is collective), cuts the batch into groups
of `num_generations`, scores them, and keeps its own share. Every process computes the
same scores from the same gathered batch.

The reward guard's time limit and failure counting cover the scoring only, never the
gather: a process stopped inside a collective would leave the others waiting.
"""

from __future__ import annotations

from typing import Any, Sequence

from accelerate.utils import gather_object

from rlrecipes.engine.guards import RewardGuard
from rlrecipes.rewards import CompletionGroup, GroupReward

# keywords TRL passes to reward functions that are not dataset columns
_TRL_KEYWORDS = ("completion_ids", "trainer_state", "log_extra", "log_metric", "environments")


def split_groups(
    prompts: Sequence[Any], completions: Sequence[str], columns: dict[str, list[Any]], size: int
) -> list[CompletionGroup]:
    """The batch cut into consecutive groups of `size` completions (TRL's generation order)."""
    if size < 1 or len(completions) % size:
        raise ValueError(f"{len(completions)} completions do not split into groups of {size}")
    return [
        CompletionGroup(
            prompts[i], list(completions[i : i + size]), {k: list(v[i : i + size]) for k, v in columns.items()}
        )
        for i in range(0, len(completions), size)
    ]


def flatten_scores(scores: Sequence[Sequence[float]], groups: Sequence[CompletionGroup]) -> list[float]:
    """One score per completion, checking the reward returned one per completion of each group."""
    if len(scores) != len(groups) or any(len(s) != len(g.completions) for s, g in zip(scores, groups)):
        raise ValueError("a group reward must return one list of scores per group, one score per completion")
    return [float(x) for group in scores for x in group]


class GatheredGroupReward:
    """A TRL reward function that scores a `GroupReward` on the gathered rollout batch."""

    def __init__(self, reward: GroupReward, guard: RewardGuard | None = None):
        self.reward, self.guard = reward, guard
        self.__name__ = reward.name  # TRL's column name: rewards/<name>/mean
        self.trainer: Any = None  # bound by RecipeGRPOTrainer once it exists

    def bind(self, trainer: Any) -> None:
        self.trainer = trainer

    def __call__(self, prompts: list[Any], completions: list[Any], **kwargs: Any) -> list[float]:
        trainer = self.trainer
        if trainer is None:
            raise RuntimeError(f"group reward {self.__name__!r} used outside RecipeGRPOTrainer")
        texts = [c if isinstance(c, str) else c[-1]["content"] for c in completions]
        columns = {k: list(v) for k, v in kwargs.items() if k not in _TRL_KEYWORDS}
        local = len(texts)
        prompts = list(prompts)
        if trainer.accelerator.num_processes > 1:
            prompts, texts = gather_object(prompts), gather_object(texts)
            columns = {k: gather_object(v) for k, v in columns.items()}
        # metrics of training steps only (TRL also scores its evaluation batches)
        log = trainer.log_metric if trainer.model.training else (lambda name, value: None)

        def score() -> list[float]:
            groups = split_groups(prompts, texts, columns, trainer.num_generations)
            return flatten_scores(self.reward.score(groups, log), groups)

        start = trainer.accelerator.process_index * local
        if self.guard is None:
            return score()[start : start + local]
        scores = self.guard.protect(self.__name__, local, score)
        if scores is None:
            return [self.guard.fallback] * local
        return self.guard.finite(self.__name__, scores[start : start + local])

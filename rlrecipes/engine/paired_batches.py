"""Keep consecutive dataset rows in the same rollout batch (an engine capability).

TRL's `RepeatSampler` shuffles single rows, so rows that only make sense together (J1
judges every preference pair in both orders and rewards consistency across the two) end
up in different batches. `BlockRepeatSampler` shuffles blocks of `rows` consecutive rows
instead, and a rollout batch (`generation_batch_size / num_generations` distinct rows) holds
whole blocks only. The sampler is identical on every process (same seed) and accelerate
splits each batch across processes, so once the engine gathers a batch (group rewards,
engine/group_rewards.py) every block is complete, on any process
count.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from trl.trainer.utils import RepeatSampler

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.errors import UserError


class BlockRepeatSampler(RepeatSampler):
    """`RepeatSampler` with the shuffle applied to blocks of `rows` consecutive indices."""

    def __init__(self, base: RepeatSampler, rows: int):
        super().__init__(
            base.data_source,
            mini_repeat_count=base.mini_repeat_count,
            batch_size=base.batch_size,
            repeat_count=base.repeat_count,
            shuffle=base.shuffle,
            seed=base.seed,
        )
        check_blocks(self.num_samples, self.batch_size, rows)
        self.rows = rows

    def __iter__(self) -> Iterator[int]:
        blocks = self.num_samples // self.rows
        order = torch.randperm(blocks, generator=self.generator).tolist() if self.shuffle else range(blocks)
        indexes = [b * self.rows + j for b in order for j in range(self.rows)]
        for start in range(0, len(indexes) - self.batch_size + 1, self.batch_size):
            chunk = indexes[start : start + self.batch_size]
            for _ in range(self.repeat_count):
                for index in chunk:
                    for _ in range(self.mini_repeat_count):
                        yield index


def check_blocks(num_rows: int, batch_rows: int, rows: int) -> None:
    """One-line errors for data or batches that cannot hold whole blocks."""
    if num_rows % rows:
        raise UserError(f"{num_rows} training rows do not split into blocks of {rows} rows kept together")
    if batch_rows % rows:
        raise UserError(
            f"trainer.prompts_per_rollout={batch_rows} must be a multiple of {rows}: "
            f"blocks of {rows} rows are kept in the same rollout batch"
        )


class KeepRowsTogether(EngineHook):
    """Ask the engine for a sampler that never splits blocks of `rows` consecutive rows."""

    def __init__(self, rows: int):
        if rows < 1:
            raise ValueError(f"rows={rows} must be at least 1")
        self.rows = rows

    def wrap_sampler(self, default: Any) -> Any:
        return BlockRepeatSampler(default, self.rows) if self.rows > 1 else default

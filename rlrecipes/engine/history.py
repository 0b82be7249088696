"""Per-example accuracy history: every time a training example is sampled, append the
fraction of its group answered correctly, keyed by the example's stable id.

This is the record One-shot RLVR ranks examples by (`rlrecipes select`); any run can
keep it with `trainer.record_accuracy_history=true`. The file has the same shape as
the paper's `acc_step_500.json`: `{id: [acc, acc, ...]}` in sampling order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from rlrecipes.engine.hooks import EngineHook


class AccuracyHistory(EngineHook):
    def __init__(self, path: Path, reward_name: str = "accuracy"):
        self.path = path
        self.reward_name = reward_name
        self.history: dict[str, list[float]] = {}

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        from accelerate.utils import gather_object

        ids = [str(row["id"]) for row in trainer.last_inputs]
        if trainer.accelerator.num_processes > 1:
            ids = gather_object(ids)
        column = list(trainer.reward_func_names).index(self.reward_name)
        record(self.history, ids, rewards[:, column].detach().cpu(), trainer.num_generations)
        if trainer.accelerator.is_main_process:
            self.path.write_text(json.dumps(self.history))
        return batch


def record(history: dict[str, list[float]], ids: list[str], correct: torch.Tensor,
           num_generations: int) -> None:
    """Append one accuracy per group (consecutive `num_generations` rows share an id)."""
    groups = correct.float().view(-1, num_generations)
    for g, accuracy in enumerate(torch.nanmean(groups, dim=1).tolist()):
        history.setdefault(ids[g * num_generations], []).append(accuracy)

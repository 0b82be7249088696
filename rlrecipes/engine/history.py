"""Per-example accuracy history: every time a training example is sampled, append the
fraction of its group answered correctly, keyed by the example's stable id.

This is the record One-shot RLVR ranks examples by (`rlrecipes select`); any run can
keep it with `trainer.record_accuracy_history=true`. The file has the same shape as
the paper's `acc_step_500.json`: `{id: [acc, acc, ...]}` in sampling order, keys in
order of first sampling. A group whose correctness is unknown (no gold answer) is
written as null, so the file stays strict JSON.

An example duplicated in the batch (one-shot RLVR's 128 copies) is sampled once per
copy, so it gains one entry per copy per step, as each copy is its own group.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Optional

import torch

from rlrecipes.engine.hooks import EngineHook, reward_column


class AccuracyHistory(EngineHook):
    def __init__(self, path: Path, reward_name: str = "accuracy"):
        self.path = path
        self.reward_name = reward_name
        self.history: dict[str, list[Optional[float]]] = {}

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: torch.Tensor) -> dict[str, Any]:
        if not trainer.model.training:  # evaluation batches are not "sampled for training"
            return batch
        from accelerate.utils import gather_object

        ids = [str(row["id"]) for row in trainer.last_inputs]
        if trainer.accelerator.num_processes > 1:
            ids = gather_object(ids)
        column = reward_column(trainer.reward_func_names, self.reward_name, "the accuracy history's reward")
        record(self.history, ids, rewards[:, column].detach().cpu(), trainer.num_generations)
        if trainer.accelerator.is_main_process:
            write_atomic(self.path, self.history)
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {"history": self.history}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        # the file may hold entries of steps after the checkpoint (written before the crash)
        self.history = {k: list(v) for k, v in state["history"].items()}
        write_atomic(self.path, self.history)


def record(
    history: dict[str, list[Optional[float]]], ids: list[str], correct: torch.Tensor, num_generations: int
) -> None:
    """Append one accuracy per group (consecutive `num_generations` rows share an id)."""
    if len(ids) != correct.numel() or correct.numel() % num_generations:
        raise ValueError(f"{len(ids)} ids for {correct.numel()} rewards in groups of {num_generations}")
    groups = correct.float().view(-1, num_generations)
    for g, accuracy in enumerate(torch.nanmean(groups, dim=1).tolist()):
        history.setdefault(ids[g * num_generations], []).append(None if math.isnan(accuracy) else accuracy)


def write_atomic(path: Path, history: dict[str, list[Optional[float]]]) -> None:
    """Replace the file in one step, so a reader (or a crash) never sees half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(history))
    os.replace(tmp, path)

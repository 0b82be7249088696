"""Training callbacks: `metrics.jsonl` (one object per logged step) and the live display."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

# TRL's metric names -> the names rlrecipes documents in metrics.jsonl
_RENAMES = {
    "reward": "reward_mean",
    "reward_std": "reward_std",
    "rewards/accuracy/mean": "accuracy",
    "kl": "kl",
    "entropy": "entropy",
    "clip_ratio/low_mean": "clip_ratio_low",
    "clip_ratio/high_mean": "clip_ratio_high",
    "clip_ratio/region_mean": "clip_ratio_region",
    "completions/mean_length": "completion_length_mean",
    "completions/max_length": "completion_length_max",
    "completions/clipped_ratio": "truncated_fraction",
    "frac_reward_zero_std": "frac_groups_zero_std",
    "grad_norm": "grad_norm",
    "learning_rate": "learning_rate",
    "loss": "loss",
}


class MetricsWriter(TrainerCallback):
    """Appends every log event to `metrics.jsonl` with step time and tokens/s added."""

    def __init__(self, path: Path):
        self.path = path
        self._last_time = time.time()
        self._last_step = 0
        self._last_tokens = 0.0
        self.rows: list[dict[str, Any]] = []

    def on_train_begin(self, args, state, control, **kwargs):
        self._last_time = time.time()

    def resume_at(self, step: int, rewrite: bool) -> None:
        """Continue a run from its checkpoint at `step`: keep the rows up to it and, on the
        process that writes, rewrite the file without the later ones (they are run again)."""
        from rlrecipes.rundir import write_lines

        rows = []
        if self.path.is_file():
            for line in self.path.read_text(errors="replace").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # the torn last line of a killed run
                    continue
                if isinstance(row, dict) and row.get("step", step + 1) <= step:
                    rows.append(row)
        self.rows = rows
        self._last_step = step
        self._last_tokens = float(rows[-1].get("num_tokens", 0.0)) if rows else 0.0
        if rewrite:
            write_lines(self.path, [json.dumps(row, default=_jsonable) for row in rows])

    def on_log(self, args, state, control, logs=None, **kwargs):
        # TRL has already reduced the metrics across processes: the main one writes them
        if not logs or "train_runtime" in logs or not state.is_world_process_zero:
            return
        now = time.time()
        steps = max(state.global_step - self._last_step, 1)
        step_time = (now - self._last_time) / steps
        tokens = float(logs.get("num_tokens", self._last_tokens))
        row: dict[str, Any] = {"step": state.global_step, "step_time": round(step_time, 4),
                               "tokens_per_second": round((tokens - self._last_tokens) / max(now - self._last_time, 1e-9), 1)}
        for key, value in logs.items():
            row[_RENAMES.get(key, key)] = value
        if "loss" in row:
            row.setdefault("kl", None)  # TRL computes KL only when recipe.beta > 0: null = not computed
        self._last_time, self._last_step, self._last_tokens = now, state.global_step, tokens
        self.rows.append(row)
        from rlrecipes.rundir import append_line

        append_line(self.path, json.dumps(row, default=_jsonable))  # whole records only


def _jsonable(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


class RichProgress(TrainerCallback):
    """A one-line live display: step, reward, accuracy, step time, ETA (and recipe extras)."""

    def __init__(self, writer: MetricsWriter, extra_keys: tuple[str, ...] = ()):
        self.writer = writer
        self.extra_keys = extra_keys
        self.progress = None
        self.task = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:  # one display per run, not one per process
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]RL[/]"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"), TextColumn("ETA"), TimeRemainingColumn(),
            transient=False,
        )
        self.task = self.progress.add_task("train", total=state.max_steps, stats="")
        self.progress.start()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.progress is None or not self.writer.rows:
            return
        row = self.writer.rows[-1]
        parts = [f"reward {_fmt(row.get('reward_mean'))}", f"acc {_fmt(row.get('accuracy'))}",
                 f"{_fmt(row.get('step_time'), 2)}s/step"]
        parts += [f"{k.split('/')[-1]} {_fmt(row.get(k))}" for k in self.extra_keys if k in row]
        self.progress.update(self.task, completed=state.global_step, stats="  ".join(parts))

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)
            self.progress.stop()


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value):.{digits}f}"

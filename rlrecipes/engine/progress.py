"""Training callbacks: `metrics.jsonl` (one object per logged step) and the live display."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlrecipes.display import format_duration
from rlrecipes.rundir import append_line, write_lines

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
        row: dict[str, Any] = {
            "step": state.global_step,
            "step_time": round(step_time, 4),
            "tokens_per_second": round((tokens - self._last_tokens) / max(now - self._last_time, 1e-9), 1),
        }
        for key, value in logs.items():
            row[_RENAMES.get(key, key)] = value
        if "loss" in row:
            row.setdefault("kl", None)  # TRL computes KL only when recipe.beta > 0: null = not computed
        self._last_time, self._last_step, self._last_tokens = now, state.global_step, tokens
        self.rows.append(row)
        append_line(self.path, json.dumps(row, default=_jsonable))  # whole records only


def _jsonable(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


class RichProgress(TrainerCallback):
    """Progress of the RL loop: step, reward, accuracy, step time, ETA (and recipe extras).

    On a terminal a rich live bar; otherwise (Slurm, ``nohup``, a pipe, where a bar prints
    nothing until it ends) a plain, flushed line every ``every`` steps with the key metrics.
    """

    def __init__(
        self,
        writer: MetricsWriter,
        extra_keys: tuple[str, ...] = (),
        every: int | None = None,
        terminal: bool | None = None,
        log: Any = None,
    ):
        self.writer = writer
        self.extra_keys = extra_keys
        self.every = every  # None: about 20 lines a run, at least one every 10 steps
        self.terminal = terminal
        self.log = log or (lambda line: print(line, flush=True))  # flushed: a file shows it at once
        self.progress = None
        self.task = None
        self._plain = False
        self._last_line = self._start_step = 0
        self._started = time.monotonic()

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:  # one display per run, not one per process
            return
        import sys

        self._started = time.monotonic()
        self._last_line = self._start_step = state.global_step  # a resumed run starts at its checkpoint
        terminal = sys.stdout.isatty() if self.terminal is None else self.terminal
        if not terminal:
            self._plain = True
            if self.every is None:
                self.every = max(1, min(10, state.max_steps // 20))
            self.log(f"train: {state.max_steps} steps, a line every {self.every}")
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn("[bold]RL[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            transient=False,
        )
        self.task = self.progress.add_task("train", total=state.max_steps, stats="")
        self.progress.start()

    def _stats(self, row: dict[str, Any]) -> list[str]:
        parts = [f"reward {_fmt(row.get('reward_mean'))}", f"acc {_fmt(row.get('accuracy'))}"]
        if self._plain:  # a log file has the room for what a bar line has not
            parts += [
                f"{name} {_fmt(row.get(key))}"
                for name, key in (("kl", "kl"), ("entropy", "entropy"), ("length", "completion_length_mean"))
                if row.get(key) is not None
            ]
        parts.append(f"{_fmt(row.get('step_time'), 2)}s/step")
        parts += [f"{k.split('/')[-1]} {_fmt(row.get(k))}" for k in self.extra_keys if k in row]
        return parts

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self.writer.rows or not (self.progress is not None or self._plain):
            return
        row = self.writer.rows[-1]
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step, stats="  ".join(self._stats(row)))
            return
        step = state.global_step
        if logs and "train_runtime" in logs:  # HF's end-of-training summary: no new step
            return
        if step - self._last_line >= self.every or (step >= state.max_steps and step > self._last_line):
            self._last_line = step
            self.log(self.line(step, state.max_steps, row))

    def line(self, step: int, total: int, row: dict[str, Any]) -> str:
        """``train step 40/120 (33%): reward 0.512  acc 0.500  ...  1.20s/step, 48s elapsed, ETA 1m36s``"""
        elapsed = time.monotonic() - self._started
        per_step = elapsed / max(step - self._start_step, 1)
        eta = format_duration(per_step * max(total - step, 0))
        pct = 100 * step / total if total else 100.0
        return (
            f"train step {step}/{total} ({pct:.0f}%): {'  '.join(self._stats(row))}, "
            f"{format_duration(elapsed)} elapsed, ETA {eta}"
        )

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)
            self.progress.stop()


class TrackerConfig(TrainerCallback):
    """The resolved rlrecipes config as each tracker's run config (TRL's integrations send
    only `GRPOConfig` and the model config, which miss the recipe, data and reward settings).
    Runs after them (callbacks added later run later), so their runs already exist."""

    def __init__(self, config: dict[str, Any], report_to: list[str], tensorboard_dir: Path):
        self.config, self.report_to, self.tensorboard_dir = config, list(report_to), tensorboard_dir

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        if "wandb" in self.report_to:
            import wandb

            if wandb.run is not None:
                wandb.config.update({"rlrecipes": self.config}, allow_val_change=True)
        if "trackio" in self.report_to:
            import trackio

            trackio.config.update({"rlrecipes": self.config}, allow_val_change=True)
        if "tensorboard" in self.report_to:
            import yaml
            from torch.utils.tensorboard import SummaryWriter

            with SummaryWriter(log_dir=str(self.tensorboard_dir)) as tb:
                tb.add_text("rlrecipes_config", "```\n" + yaml.safe_dump(self.config, sort_keys=False) + "```")


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value):.{digits}f}"

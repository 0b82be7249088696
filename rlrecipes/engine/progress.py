"""Training callbacks: `metrics.jsonl` (one object per logged step) and the live display."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlrecipes.display import MOSTLY_TRUNCATED, format_duration, job_prefix, pack, width, wrapped
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
    # TRL's own step_time is the time inside training_step only (generation, rewards, loss,
    # backward; not the optimizer step or the callbacks): kept under its own name, so it never
    # replaces this row's step_time, the wall time from one logged step to the next
    "step_time": "training_step_time",
}


def truncation_warning(rows: list[dict[str, Any]], limit: Any) -> str | None:
    """One line when most completions of the run so far hit `limit` (mean over logged steps)."""
    shares = [float(r["truncated_fraction"]) for r in rows if r.get("truncated_fraction") is not None]
    if not shares or sum(shares) / len(shares) <= MOSTLY_TRUNCATED:
        return None
    mean = 100 * sum(shares) / len(shares)
    return (
        f"{mean:.0f}% of completions hit trainer.max_completion_length={limit} (mean over {len(shares)} "
        "logged steps): their answers are cut; raise it"
    )


class MetricsWriter(TrainerCallback):
    """Appends every log event to `metrics.jsonl` with step time and tokens/s added. At the end
    of training its last row (which the run's summary.json keeps as `final_metrics`) gets
    `warnings`: what the user should know about the whole run (most completions cut)."""

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
                at = row.get("step") if isinstance(row, dict) else None
                if isinstance(at, (int, float)) and not isinstance(at, bool) and at <= step:
                    rows.append(row)  # a record of a step the checkpoint has (one without a step: none)
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
            # when the step ended (unix seconds): lines steps up against the clock, e.g. two
            # runs measured side by side (benchmarks/bench_engine_overhead.py)
            "wall_time": round(now, 3),
            "tokens_per_second": round((tokens - self._last_tokens) / max(now - self._last_time, 1e-9), 1),
        }
        for key, value in logs.items():
            row[_RENAMES.get(key, key)] = value
        if "loss" in row:
            row.setdefault("kl", None)  # TRL computes KL only when recipe.beta > 0: null = not computed
        self._last_time, self._last_step, self._last_tokens = now, state.global_step, tokens
        self.rows.append(row)
        append_line(self.path, json.dumps(row, default=_jsonable))  # whole records only

    def on_train_end(self, args, state, control, **kwargs):
        warning = truncation_warning(self.rows, getattr(args, "max_completion_length", "?"))
        if warning and self.rows:
            self.rows[-1]["warnings"] = [warning]


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
        self._warned = False  # the truncation warning is said once; the line keeps flagging it
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
            self.log(f"{job_prefix()}train: {state.max_steps} steps, a line every {self.every}")
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.progress = Progress(
            TextColumn(f"[bold]{job_prefix()}RL[/]"),
            BarColumn(bar_width=12),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            transient=False,
        )
        self.task = self.progress.add_task("train", total=state.max_steps, stats="")
        self.progress.start()

    def _stats(self, row: dict[str, Any]) -> list[str]:
        """Labelled values, most important first, each metric once (a recipe's extra key that is
        already shown is not repeated)."""
        parts = [f"reward {_fmt(row.get('reward_mean'))}", f"acc {_fmt(row.get('accuracy'))}"]
        shown = {"reward_mean", "accuracy", "step_time"}
        truncated = row.get("truncated_fraction")
        if truncated is not None and float(truncated) > MOSTLY_TRUNCATED:
            parts.append(f"truncated {100 * float(truncated):.0f}%!")  # the reward measures the limit
            shown.add("truncated_fraction")
        parts.append(f"{_fmt(row.get('step_time'), 2)}s/step")
        if self._plain:  # a log file has the room for what a bar line has not
            for key in ("kl", "entropy", "completion_length_mean"):
                if row.get(key) is not None:
                    parts.append(f"{_label(key)} {_fmt(row.get(key))}")
                shown.add(key)
        for key in self.extra_keys:
            if key in row and key not in shown:
                parts.append(f"{_label(key)} {_fmt(row.get(key))}")
                shown.add(key)
        return parts

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not self.writer.rows or not (self.progress is not None or self._plain):
            return
        row = self.writer.rows[-1]
        self._warn_once(row, args)
        if self.progress is not None:
            # the bar, the step count and the ETA take about 35 columns; the values get the rest
            stats = pack("", self._stats(row), columns=max(20, width() - 36))
            self.progress.update(self.task, completed=state.global_step, stats=stats)
            return
        step = state.global_step
        if logs and "train_runtime" in logs:  # HF's end-of-training summary: no new step
            return
        if step - self._last_line >= self.every or (step >= state.max_steps and step > self._last_line):
            self._last_line = step
            self.log(self.line(step, state.max_steps, row))

    def _warn_once(self, row: dict[str, Any], args: Any) -> None:
        truncated = row.get("truncated_fraction")
        if self._warned or truncated is None or float(truncated) <= MOSTLY_TRUNCATED:
            return
        self._warned = True
        limit = getattr(args, "max_completion_length", "?")
        self._say(
            f"{job_prefix()}warning: {100 * float(truncated):.0f}% of this step's completions hit "
            f"trainer.max_completion_length={limit}: their answers are cut (raise it)"
        )

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress.console.print(text, highlight=False)
        else:
            self.log(wrapped(text))

    def line(self, step: int, total: int, row: dict[str, Any]) -> str:
        """``train step 40/120: reward 0.512  acc 0.500  1.20s/step  ..., ETA 1m36s (48s elapsed)``,
        within the terminal's width: values that do not fit go to indented lines below."""
        elapsed = time.monotonic() - self._started
        per_step = elapsed / max(step - self._start_step, 1)
        eta = format_duration(per_step * max(total - step, 0))
        head = f"{job_prefix()}train step {step}/{total}:"
        return pack(head, self._stats(row), f", ETA {eta} ({format_duration(elapsed)} elapsed)", wrap=True)

    def on_train_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)
            self.progress.stop()
        if state.is_world_process_zero:
            warning = truncation_warning(self.writer.rows, getattr(args, "max_completion_length", "?"))
            if warning:
                self.log(wrapped(f"{job_prefix()}warning: {warning}"))


def _label(key: str) -> str:
    """A metric's name in a progress line: its last part, or the part before a bare statistic
    (`self_certainty/mean` -> self_certainty), with the long names shortened."""
    parts = key.split("/")
    name = parts[-2] if len(parts) > 1 and parts[-1] in ("mean", "std", "max", "min") else parts[-1]
    return {"completion_length_mean": "length", "truncated_fraction": "truncated"}.get(name, name)


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

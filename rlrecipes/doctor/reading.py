"""Reading a run directory for the doctor: its metrics by name, its settings and the command
line that started it, its stored samples, and what could not be read. Nothing but the run's
own files (config.yaml, metrics.jsonl, summary.json, versions.json, samples/) is read."""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from rlrecipes.doctor.preflight import RESULT_FILE
from rlrecipes.errors import UserError
from rlrecipes.runs.discover import Run, find_runs, load_runs, number
from rlrecipes.step_samples import StepSamples, read_step, stored_steps

Point = tuple[int, float]  # (step, value)
COMMANDS = ("train", "sft", "eval")  # the rlrecipes commands whose runs a versions.json may record


@dataclass
class RunRecord:
    """A training run as the checks see it."""

    path: Path
    rows: list[dict[str, Any]]  # metrics.jsonl's whole records that carry a step
    config: dict[str, Any]  # the resolved config, flattened to dotted keys ({} without config.yaml)
    summary: dict[str, Any]
    command: str  # the rlrecipes command that trained it ("train")
    overrides: list[str] | None  # its command-line overrides as typed (versions.json); None: not recorded
    notes: list[str] = field(default_factory=list)  # what was left out or could not be read
    _samples: list[StepSamples] | None = field(default=None, repr=False)  # read on first use

    def raw(self, key: str) -> list[tuple[int, Any]]:
        """(step, value) wherever `key` was logged as a number, NaN and infinities included."""
        return [
            (int(r["step"]), r[key])
            for r in self.rows
            if isinstance(r.get(key), (int, float)) and not isinstance(r.get(key), bool)
        ]

    def series(self, key: str) -> list[Point]:
        """(step, value) wherever `key` was logged as a finite number."""
        return [(step, float(v)) for step, v in self.raw(key) if math.isfinite(v)]

    def has(self, key: str) -> bool:
        return bool(self.raw(key))

    def keys_like(self, prefix: str) -> list[str]:
        return sorted({k for r in self.rows for k in r if k.startswith(prefix)})

    def setting(self, key: str) -> Any:
        return self.config.get(key)

    @property
    def steps(self) -> tuple[int, int]:
        return int(self.rows[0]["step"]), int(self.rows[-1]["step"])

    def samples(self) -> list[StepSamples]:
        """Every stored step's samples, oldest first (read once; unreadable lines become notes)."""
        if self._samples is None:
            self._samples = []
            for step in stored_steps(self.path):
                try:
                    found = read_step(self.path, step)
                except UserError as exc:
                    self.notes.append(str(exc))
                    continue
                self.notes += found.skipped
                self._samples.append(found)
        return self._samples


@dataclass
class Unreadable:
    """A run the checks cannot look at: `reason` is its one line. `skipped`: not an RL run
    (an eval or SFT run), which is no fault of the run."""

    path: Path
    reason: str
    skipped: bool = False


Record = Union[RunRecord, Unreadable]


def read_runs(paths: Sequence[str | Path], log: Callable[[str], None]) -> list[Record]:
    """The runs at or below `paths` (a run, a sweep, a stages parent, globs), each read on its
    own: one that cannot be read is an `Unreadable` beside the others, not the end of the list.
    A path that holds no run at all is a UserError (one line)."""
    return [read_run(path) for path in find_runs(paths, log)]


def read_run(path: Path) -> Record:
    try:
        [run] = load_runs([path], log=lambda _note: None)  # its notes are said here, in the doctor's words
    except UserError as exc:  # a torn summary.json
        return Unreadable(path, str(exc))
    if run.kind == "eval":
        return Unreadable(path, "an eval run: the doctor checks training runs (rlrecipes train)", skipped=True)
    if any(key.startswith("sft.") for key in run.config) or run.summary.get("recipe") == "sft":
        return Unreadable(path, "an SFT run: the doctor checks RL runs (rlrecipes train)", skipped=True)
    rows, dropped, repeated = by_step(run.metrics)
    if not rows:
        return Unreadable(path, _why_no_steps(run, dropped))
    command, overrides = _invocation(path)
    return RunRecord(path, rows, run.config, run.summary, command, overrides, _notes(run, rows, dropped, repeated))


def by_step(metrics: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
    """The records that carry a step (a whole number, 0 or more, within the float range), one a
    step in step order: where a step was logged more than once, its later record (a run continued by
    hand or files joined: what was logged last is what the run went on from). Also how many records
    had a step that is none of those (1.5, inf, 10**400, "3", null) and how many steps were logged
    more than once. A record without `step` is no training step's (an event) and is passed over."""
    kept: dict[int, dict[str, Any]] = {}
    dropped, repeated = 0, set()
    for row in metrics:
        if "step" not in row:
            continue
        if not _whole(row["step"]):
            dropped += 1
            continue
        step = int(row["step"])
        if step in kept:
            repeated.add(step)
        kept[step] = {**row, "step": step}
    return [kept[step] for step in sorted(kept)], dropped, len(repeated)


def _whole(step: Any) -> bool:
    value = number(step)
    return value is not None and value >= 0 and value.is_integer()


def _why_no_steps(run: Run, dropped: int = 0) -> str:
    metrics = run.path / "metrics.jsonl"
    refusal = _preflight_refusal(run.path)
    if refusal:  # refused before its first update: the refusal is the verdict
        return f"{run.path}: refused before its first update, nothing trained: {refusal}"
    if not metrics.is_file():
        return (
            f"{metrics}: missing; the run logged no step (it failed or was stopped before its first one, "
            "or is starting): nothing to check"
        )
    if dropped:
        return (
            f"{metrics}: {dropped} records, none with a step that is a whole number of 0 or more (not a metrics "
            "log of rlrecipes train?): nothing to check"
        )
    if run.bad_lines:
        return f"{metrics}: no whole record among its {run.lines} lines (torn or not a metrics log): nothing to check"
    return f"{metrics}: empty; the run logged no step yet: nothing to check"


def read_preflight(path: Path) -> Optional[dict[str, Any]]:
    """The pre-flight's stored verdict, RUN/preflight.json (None: none, or unreadable)."""
    try:
        verdict = json.loads((path / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return verdict if isinstance(verdict, dict) else None


def _preflight_refusal(path: Path) -> Optional[str]:
    """The pre-flight's one-line refusal from RUN/preflight.json (None: none, or unreadable)."""
    refusal = (read_preflight(path) or {}).get("refusal")
    return refusal if isinstance(refusal, str) and refusal else None


def _notes(run: Run, rows: list[dict[str, Any]], dropped: int = 0, repeated: int = 0) -> list[str]:
    notes = []
    metrics = run.path / "metrics.jsonl"
    if dropped:
        notes.append(f"{metrics}: records whose step is no whole number of 0 or more ({dropped}): ignored")
    if repeated:
        notes.append(
            f"{metrics}: steps logged more than once ({repeated}): each step's last record is checked (a run "
            "continued by hand, or logs joined?)"
        )
    if run.bad_lines == [run.lines]:
        notes.append(
            f"{metrics}: its last line ({run.lines}) is torn (killed while writing it?): ignored; "
            f"checked up to step {rows[-1]['step']}"
        )
    elif run.bad_lines:
        listed = ", ".join(map(str, run.bad_lines[:5])) + (", ..." if len(run.bad_lines) > 5 else "")
        notes.append(f"{metrics}: lines {listed} are not whole JSON records: ignored")
    if not run.summary:
        notes.append(
            f"no summary.json: the run stopped (killed, crashed) or is still running; "
            f"checked its {len(rows)} logged steps"
        )
    if not run.config:
        notes.append("no readable config.yaml: the fixes cannot name the run's own values")
    return notes


def _invocation(path: Path) -> tuple[str, list[str] | None]:
    """The command that started the run and its overrides as typed (with + and ~), from
    versions.json; ("train", None) when it records neither."""
    try:
        versions = json.loads((path / "versions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, torn or not UTF-8
        return "train", None
    if not isinstance(versions, dict):
        return "train", None
    try:
        words = shlex.split(str(versions.get("command") or ""))
    except ValueError:  # unbalanced quotes in a hand-edited file
        words = []
    command = next((w for w in words if w in COMMANDS), "train")
    listed = versions.get("job_overrides")
    return command, [str(item) for item in listed] if isinstance(listed, list) else None

"""Finding run directories and reading what they hold (config, summary, metrics), without
trusting them: a torn or foreign file is a note or a one-line error, never a traceback."""

from __future__ import annotations

import glob
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rlrecipes.config.schema import MOVED_KEYS
from rlrecipes.errors import UserError
from rlrecipes.rundir import flatten_config


@dataclass
class Run:
    path: Path
    summary: dict[str, Any]
    config: dict[str, Any]  # the resolved config, flattened to dotted keys
    overrides: dict[str, str]  # the job's Hydra overrides (versions.json)
    metrics: list[dict[str, Any]]  # metrics.jsonl rows (a torn last line is skipped)
    bad_lines: list[int] = field(default_factory=list)  # metrics.jsonl lines that are no whole record
    lines: int = 0  # metrics.jsonl's line count

    @property
    def kind(self) -> str:
        return "eval" if self.summary.get("kind") == "eval" or "benchmarks" in self.summary else "train"

    @property
    def state(self) -> str:
        """finished; stopped (killed, crashed or still running: the steps column says how far);
        or no steps (it ended, or is still, before its first step)."""
        if self.summary:
            return "finished"
        return "stopped" if any(isinstance(r.get("step"), (int, float)) for r in self.metrics) else "no steps"


def is_run(path: Path) -> bool:
    return (
        (path / "summary.json").is_file()
        or (path / "metrics.jsonl").is_file()
        or ((path / "config.yaml").is_file() and (path / "versions.json").is_file())
    )


def is_pipeline(path: Path) -> bool:
    """A stages parent (`rlrecipes stages`): its runs are its stages' (`<i>-<stage>/`), so a
    report shows one row per stage. Its summary.json lists the stages; until it has one (a
    pipeline still running), its config.yaml holds the pipeline."""
    try:
        if (path / "summary.json").is_file():
            summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
            return isinstance(summary, dict) and "pipeline" in summary and isinstance(summary.get("stages"), list)
        config = path / "config.yaml"
        return config.is_file() and re.search(r"^pipeline:", config.read_text(encoding="utf-8"), re.M) is not None
    except (OSError, ValueError):  # torn or unreadable: read as a run, whose errors say what is wrong
        return False


def _natural(path: Path) -> list[Any]:
    # sweep jobs are 0-..., 1-..., 10-...: by number, not by text
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def find_runs(paths: Sequence[str | Path], log: Callable[[str], None] = print) -> list[Path]:
    """Run directories given as paths or globs, or found below them (not inside another run:
    a training run's own `eval/` belongs to it).

    A path given by name must be or hold a run; a glob's match that is neither (a notes
    folder beside the runs) is skipped with a note through `log`, not the end of the table."""
    runs: list[Path] = []
    for raw in paths:
        pattern = glob.has_magic(str(raw))
        matches = (
            [Path(m) for m in sorted(glob.glob(os.path.expanduser(str(raw))))] if pattern else [Path(raw).expanduser()]
        )
        if not matches:
            raise UserError(f"{raw}: no such run directory (the pattern matches nothing)")
        for p in matches:
            found = [p] if is_run(p) and not is_pipeline(p) else _runs_below(p)
            if not found and pattern:
                log(f"skipping {p}: no run here or below (it matches {raw})")
            elif not found:
                raise UserError(
                    f"{p}: no run here or below (a run directory holds summary.json, metrics.jsonl or config.yaml)"
                    if p.is_dir()
                    else f"{p}: no such run directory"
                )
            runs += found
    if not runs:
        raise UserError(f"{', '.join(map(str, paths))}: no run directory among the matches")
    return list(dict.fromkeys(runs))


def _runs_below(folder: Path) -> list[Path]:
    found = []
    for here_name, subdirs, _ in os.walk(folder):
        here = Path(here_name)
        if here != folder and is_run(here) and not is_pipeline(here):
            found.append(here)
            subdirs[:] = []
        subdirs.sort()
    return sorted(found, key=_natural)


def read_summary(run: Path) -> dict[str, Any]:
    """A run's summary.json ({} while it has none); one line if it is torn or unreadable."""
    if not (run / "summary.json").is_file():
        return {}
    try:
        summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"{run / 'summary.json'}: not valid JSON ({exc.msg}); torn or not a run summary") from None
    except UnicodeDecodeError:
        raise UserError(f"{run / 'summary.json'}: not UTF-8 text, so not a run summary") from None
    except OSError as exc:
        raise UserError(f"{run / 'summary.json'}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(summary, dict):
        raise UserError(f"{run / 'summary.json'}: not a run summary (a JSON object is expected)")
    return summary


def _read_config(run: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load((run / "config.yaml").read_text()) if (run / "config.yaml").is_file() else {}
    except (yaml.YAMLError, UnicodeDecodeError, OSError):  # no config to show: the columns say "-"
        data = {}
    return with_moved_keys(flatten_config(data)) if isinstance(data, dict) else {}


def with_moved_keys(flat: dict[str, Any]) -> dict[str, Any]:
    """Settings of a run written before a key moved (MOVED_KEYS) under their new names, so old
    and new runs share one column in a report (the run's files are left as they are)."""
    return {MOVED_KEYS.get(key, key): value for key, value in flat.items()}


def _read_overrides(run: Path) -> dict[str, str]:
    try:
        versions = json.loads((run / "versions.json").read_text())
    except (OSError, ValueError):  # missing, torn or not UTF-8: no overrides to show
        return {}
    listed = versions.get("job_overrides") if isinstance(versions, dict) else None
    out = {}
    for item in listed or []:
        key, sep, value = str(item).partition("=")
        if sep:
            key = key.lstrip("+~")
            out[MOVED_KEYS.get(key, key)] = value
    return out


def read_metrics(run: Path) -> tuple[list[dict[str, Any]], list[int], int]:
    """metrics.jsonl's whole records, the numbers of the lines that are none (the torn last
    line of a killed run, bytes that are not UTF-8), and its line count."""
    rows, bad, count = [], [], 0
    path = run / "metrics.jsonl"
    if not path.is_file():
        return rows, bad, count
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    for count, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line.decode("utf-8"))
        except ValueError:  # JSONDecodeError, UnicodeDecodeError
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            bad.append(count)
    return rows, bad, count


def metrics_note(run: Run) -> str | None:
    """What a table or plot of `run` must say about the metrics.jsonl lines it left out."""
    if not run.bad_lines:
        return None
    path = run.path / "metrics.jsonl"
    if run.bad_lines == [run.lines]:
        steps = [r["step"] for r in run.metrics if number(r.get("step")) is not None]
        shown = f"step {steps[-1]}, the last whole line" if steps else "no step"
        return f"{path}: its last line ({run.lines}) is torn (killed while writing it?) and left out; shown: {shown}"
    if len(run.bad_lines) == 1:
        return f"{path}: line {run.bad_lines[0]} is not a whole JSON record (damaged or not UTF-8) and is left out"
    listed = ", ".join(map(str, run.bad_lines[:5])) + (", ..." if len(run.bad_lines) > 5 else "")
    return f"{path}: {len(run.bad_lines)} lines are not whole JSON records (lines {listed}) and are left out"


def load_runs(paths: Sequence[str | Path], log: Callable[[str], None] = print) -> list[Run]:
    """The runs `find_runs` finds, read; what was skipped or left out is said through `log`."""
    runs = []
    for p in find_runs(paths, log):
        run = Run(p, read_summary(p), _read_config(p), _read_overrides(p), *read_metrics(p))
        if note := metrics_note(run):
            log(note)
        runs.append(run)
    return runs


def number(value: Any) -> float | None:
    """`value` as a finite float (None: not a number, a bool, NaN, an infinity, or an integer past
    the float range, which a JSON file may hold)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:
        return None

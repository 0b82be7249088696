"""Tables of results: one eval run (printed after `eval`, and `report.md` in the run
directory) and many runs side by side (`rlrecipes report RUN_DIR...`).

`report` takes run directories, folders holding runs (a multirun sweep) and globs. Each run
is one row: its state, recipe, model, data, seed, every parameter whose value differs
between the runs (the keys of the runs' Hydra overrides, read back from each resolved
config), then final and best metrics: held-out accuracy and rewards for training runs, each
benchmark's headline metric for eval runs. `--group-by` folds runs (e.g. seeds) into
mean ± std with their count; the table exports to CSV, JSON and Markdown.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import math
import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlrecipes.errors import UserError
from rlrecipes.eval.scoring import headline
from rlrecipes.rundir import flatten_config, write_text
from rlrecipes.storage import writing


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}"


def _largest_k(metrics: dict[str, Any], kind: str) -> str | None:
    ks = [int(k.split("@")[1]) for k in metrics if k.startswith(kind + "@")]
    return f"{kind}@{max(ks)}" if ks and max(ks) > 1 else None


def benchmark_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Columns and rows of one run's table: pass@1 plus, when sampled, pass@n and maj@n
    (every other k is in summary.json)."""
    benches = summary.get("benchmarks", {})
    sampled = any(m.get("samples_per_problem", 1) > 1 for m in benches.values())
    columns = ["benchmark", "problems", "n", "pass@1 %"] + (["pass@n %", "maj@n %"] if sampled else [])
    columns += ["no answer %", "truncated %", "mean length"]
    rows = []
    for name, m in benches.items():
        length = m.get("mean_completion_tokens", m.get("mean_completion_chars"))
        row = [name, str(m.get("problems", 0)), str(m.get("samples_per_problem", "-")), _pct(m.get("pass@1"))]
        if sampled:
            row += [_pct(m.get(k)) if k else "-" for k in (_largest_k(m, "pass"), _largest_k(m, "maj"))]
        row += [
            _pct(m.get("no_answer_fraction")),
            _pct(m.get("truncated_fraction")),
            "-" if length is None else f"{length:.0f}",
        ]
        rows.append(row)
    return columns, rows


def print_eval_summary(summary: dict[str, Any], run_dir: Path, console: Console) -> None:
    title = f"{summary.get('model')}  [{summary['protocol'].get('name')}]  -> {run_dir}"
    table = Table(title=escape(title))
    columns, rows = benchmark_rows(summary)
    for col in columns:
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    for row in rows:
        table.add_row(*row)
    avg = summary.get("average", {})
    if avg.get("benchmarks", 0) > 1:
        table.add_row("average", *[""] * 2, _pct(avg.get("headline")), *[""] * (len(columns) - 4))
    console.print(table)
    for name, m in summary.get("benchmarks", {}).items():
        for attr in ("by_subject", "by_level"):
            if attr in m:
                parts = ", ".join(f"{k} {_pct(v['pass@1'])} ({v['problems']})" for k, v in m[attr].items())
                console.print(escape(f"  {name} {attr.replace('_', ' ')}: {parts}"), highlight=False)


def write_report(run_dir: Path, summary: dict[str, Any]) -> None:
    """``report.md``: the same table in Markdown."""
    columns, rows = benchmark_rows(summary)
    lines = [
        f"# eval: {summary.get('model')} [{summary['protocol'].get('name')}]",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    with writing(run_dir / "report.md", "the results are in summary.json"):
        write_text(run_dir / "report.md", "\n".join(lines) + "\n")


# ------------------------------------------------------------------------- many runs
IDENTITY = ("recipe", "model", "data", "seed")
# Override keys that never change what a run computes (where it writes, how it shows progress)
_NOISE = re.compile(
    r"^(run_dir|output_root|cache_dir|resume|report_to|final_eval|progress|progress_every|"
    r"trainer\.progress|hydra[./].*|data_dir|generations)$"
)
_OPERATORS = ("!=", ">=", "<=", "=", ">", "<")


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


@dataclass
class Report:
    """Rows of raw values (fractions, numbers) keyed by column; `kinds` says what a column is:
    id (the run), param (a setting) or metric (a result: aggregated by --group-by)."""

    columns: list[str]
    kinds: dict[str, str]
    rows: list[dict[str, Any]]
    grouped: bool = False
    percent: set[str] = field(default_factory=set)  # metric columns that are fractions


def is_run(path: Path) -> bool:
    return (
        (path / "summary.json").is_file()
        or (path / "metrics.jsonl").is_file()
        or ((path / "config.yaml").is_file() and (path / "versions.json").is_file())
    )


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
            found = [p] if is_run(p) else _runs_below(p)
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
        if here != folder and is_run(here):
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
    return flatten_config(data) if isinstance(data, dict) else {}


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
            out[key.lstrip("+~")] = value
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
        steps = [r["step"] for r in run.metrics if _number(r.get("step")) is not None]
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


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _short_model(value: Any) -> Any:
    text = str(value)
    if text.startswith(("/", ".", "~")):  # a local folder: its last two parts say enough
        return "/".join(Path(text).parts[-2:])
    return value


def _identity(run: Run) -> dict[str, Any]:
    s, c = run.summary, run.config
    # the configured name first: a built toy model's path is a cache folder
    model = c.get("model.name_or_path") or c.get("model.name") or s.get("model")
    return {
        "recipe": s.get("recipe", c.get("recipe.name")),
        "model": _short_model(model) if model is not None else None,
        "data": s.get("data", c.get("data.name")),
        "seed": s.get("seed", c.get("seed")),
    }


def _param_value(run: Run, key: str) -> Any:
    # the resolved value when the key is a setting; a group choice (reward=random) as written
    if key in run.config:
        return run.config[key]
    if f"{key}.name" in run.config:
        return run.config[f"{key}.name"]
    return run.overrides.get(key)


def _train_metrics(run: Run) -> dict[str, Any]:
    s, rows = run.summary, run.metrics
    rewards = [v for r in rows if (v := _number(r.get("reward_mean"))) is not None]
    train_acc = [v for r in rows if (v := _number(r.get("accuracy"))) is not None]
    heldout = [v for r in rows if (v := _number(r.get("heldout_accuracy"))) is not None]
    before, after = _number(s.get("accuracy_before")), _number(s.get("accuracy_after"))
    best = max(heldout + ([after] if after is not None else []), default=None)
    steps = s.get("steps", max((r["step"] for r in rows if _number(r.get("step")) is not None), default=None))
    return {
        "steps": steps,
        "heldout_before": before,
        "heldout_after": after,
        "gain": after - before if after is not None and before is not None else None,
        "heldout_best": best,
        "train_accuracy_final": train_acc[-1] if train_acc else None,
        "reward_final": rewards[-1] if rewards else None,
        "reward_best": max(rewards, default=None),
    }


def _eval_metrics(run: Run) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, m in run.summary.get("benchmarks", {}).items():
        out[name] = headline(m)[1] if isinstance(m, dict) else None
    out["average"] = run.summary.get("average", {}).get("headline")
    return out


TRAIN_PERCENT = {"heldout_before", "heldout_after", "gain", "heldout_best", "train_accuracy_final"}


def build_report(runs: Sequence[Run]) -> Report:
    """One row per run; parameter columns are the override keys whose values differ."""
    keys = list(
        dict.fromkeys(
            k
            for run in runs
            for k in run.overrides
            if not _NOISE.match(k) and k not in IDENTITY and k not in ("experiment",)
        )
    )
    keys = ["experiment"] * any("experiment" in r.overrides for r in runs) + keys
    values = {k: [_param_value(r, k) for r in runs] for k in keys}
    params = [k for k in keys if len({json.dumps(v, default=str) for v in values[k]}) > 1]
    has_eval = any(r.kind == "eval" for r in runs)
    names = _run_names([r.path for r in runs])
    rows, metric_cols, percent = [], [], set()
    for i, run in enumerate(runs):
        row: dict[str, Any] = {"run": names[i], "state": run.state, **_identity(run)}
        if has_eval:
            protocol = run.summary.get("protocol")
            row["protocol"] = protocol.get("name") if isinstance(protocol, dict) else run.config.get("protocol.name")
        row.update({k: values[k][i] for k in params})
        metrics = _eval_metrics(run) if run.kind == "eval" else _train_metrics(run)
        for k in metrics:
            if k not in metric_cols:
                metric_cols.append(k)
        percent |= set(metrics) - {"steps", "reward_final", "reward_best"} if run.kind == "eval" else TRAIN_PERCENT
        row.update(metrics)
        rows.append(row)
    # a metric no run has (e.g. held-out accuracy with eval_after=false) is no column
    metric_cols = [k for k in metric_cols if any(r.get(k) is not None for r in rows)]
    id_cols = ["run", "state", *IDENTITY] + (["protocol"] if has_eval else [])
    id_cols = [c for c in id_cols if c in ("run", "state") or any(r.get(c) is not None for r in rows)]
    kinds = {
        **{c: "id" for c in id_cols},
        **{c: "param" for c in params},
        **{c: "id" if c == "steps" else "metric" for c in metric_cols},
    }  # steps: how far, not a result
    return Report(list(kinds), kinds, rows, percent=percent & set(metric_cols))


def _run_names(paths: Sequence[Path]) -> list[str]:
    """Each run's path relative to the folder all of them share (its name when alone)."""
    if len(paths) == 1:
        return [paths[0].name]
    common = Path(os.path.commonpath([str(p.resolve()) for p in paths]))
    return [str(p.resolve().relative_to(common)) or p.name for p in paths]


def _matches(row: dict[str, Any], condition: str) -> bool:
    for op in _OPERATORS:
        if op in condition:
            key, _, want = (part.strip() for part in condition.partition(op))
            break
    else:
        raise UserError(f"--where {condition!r}: expected KEY=VALUE (or !=, >, <, >=, <=)")
    if key not in row:
        raise UserError(f"--where {condition!r}: no column {key!r}; columns: {', '.join(row)}")
    have = row[key]
    if op in ("=", "!="):
        try:
            same = have is not None and float(have) == float(want)
        except (TypeError, ValueError):
            same = str(have) == want or (have is None and want in ("None", "null", "-"))
        return same if op == "=" else not same
    number = _number(have)
    if number is None:
        return False
    try:
        limit = float(want)
    except ValueError:
        raise UserError(f"--where {condition!r}: {op} needs a number") from None
    return {">": number > limit, "<": number < limit, ">=": number >= limit, "<=": number <= limit}[op]


def filter_rows(report: Report, where: Sequence[str]) -> Report:
    rows = [r for r in report.rows if all(_matches(r, c) for c in where)]
    return Report(report.columns, report.kinds, rows, report.grouped, report.percent)


def group_rows(report: Report, by: Sequence[str]) -> Report:
    """Fold the runs that agree on `by` into one row: metrics as {mean, std, n} (sample std;
    0 for one run), other columns kept where the group agrees, '*' where it does not.
    `by=["auto"]`: every parameter column except the seed."""
    if list(by) == ["auto"]:
        by = [c for c in report.columns if report.kinds[c] == "param" or c in ("recipe", "model", "data")]
        by = [c for c in by if c != "seed"]
    unknown = [k for k in by if k not in report.kinds]
    if unknown:
        raise UserError(f"--group-by {unknown[0]}: no such column; columns: {', '.join(report.columns)}")
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in report.rows:
        groups.setdefault(json.dumps([row.get(k) for k in by], default=str), []).append(row)
    out = []
    for members in groups.values():
        row: dict[str, Any] = {"runs": len(members)}
        for col in report.columns:
            if report.kinds[col] == "metric":
                vals = [v for m in members if (v := _number(m.get(col))) is not None]
                row[col] = {
                    "mean": statistics.fmean(vals) if vals else None,
                    "std": statistics.stdev(vals) if len(vals) > 1 else (0.0 if vals else None),
                    "n": len(vals),
                }
            elif col == "state":
                counts: dict[str, int] = {}
                for m in members:
                    counts[m["state"]] = counts.get(m["state"], 0) + 1
                row[col] = ", ".join(f"{n} {s}" for s, n in counts.items())
            elif col != "run":
                distinct = list(dict.fromkeys(json.dumps(m.get(col), default=str) for m in members))
                row[col] = members[0].get(col) if len(distinct) == 1 else "*"
        out.append(row)
    columns = [c for c in report.columns if c != "run"]
    columns.insert(columns.index("state") + 1, "runs")
    kinds = {c: ("id" if c == "runs" else report.kinds[c]) for c in columns}
    return Report(columns, kinds, out, grouped=True, percent=report.percent)


def sort_rows(report: Report, key: str | None, descending: bool = False) -> Report:
    if not key:
        return report
    if key not in report.kinds and key != "runs":
        raise UserError(f"--sort {key}: no such column; columns: {', '.join(report.columns)}")

    def value(row: dict[str, Any]) -> Any:
        v = row.get(key)
        return v.get("mean") if isinstance(v, dict) else v

    present = [r for r in report.rows if value(r) is not None]
    missing = [r for r in report.rows if value(r) is None]  # last, in either direction
    present.sort(
        key=lambda r: (0, _number(value(r))) if _number(value(r)) is not None else (1, str(value(r))),
        reverse=descending,
    )
    rows = present + missing
    return Report(report.columns, report.kinds, rows, report.grouped, report.percent)


# ------------------------------------------------------------------------ formatting
def cell(report: Report, row: dict[str, Any], col: str, compact: bool = False) -> str:
    """A value as shown: fractions in %, a group's metric as mean ± std (and its n when
    fewer runs than the group's had the metric)."""
    value = row.get(col)
    pct = col in report.percent

    def fmt(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{100 * v:.1f}" if pct else (f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}")
        return str(v)

    if isinstance(value, dict):
        if value.get("mean") is None:
            return "-"
        text = f"{fmt(value['mean'])}{'±' if compact else ' ± '}{fmt(value['std'])}"
        return text + (f" (n={value['n']})" if value["n"] != row.get("runs") else "")
    return fmt(value)


SHORT = {
    "heldout_before": "before",
    "heldout_after": "after",
    "heldout_best": "best",
    "train_accuracy_final": "train acc",
    "reward_final": "reward",
    "reward_best": "best reward",
}


def column_labels(columns: Sequence[str]) -> dict[str, str]:
    """Terminal headers: a dotted key by its last part where that is unambiguous."""
    tails = [c.rsplit(".", 1)[-1] for c in columns]
    # "_" as a space: a header may wrap between words instead of taking a value's room
    return {c: SHORT.get(c, t if tails.count(t) == 1 else c).replace("_", " ") for c, t in zip(columns, tails)}


def rich_table(report: Report, title: str = "rlrecipes report") -> Table:
    """The table for a terminal: columns every row agrees on (recipe, model, ...) move to the
    caption, so 80 columns hold what tells the runs apart (the exports keep every column)."""
    shown, shared = [], []
    for col in report.columns:
        distinct = {json.dumps(r.get(col), default=str) for r in report.rows}
        # an eval run's protocol stays on its row: it says how each number was measured
        if (
            report.kinds[col] != "metric"
            and col not in ("run", "protocol")
            and len(report.rows) > 1
            and len(distinct) == 1
        ):
            shared.append(f"{col} {cell(report, report.rows[0], col)}")
        else:
            shown.append(col)
    pct = " (accuracy in %)" if report.percent else ""
    # no vertical rules: on 80 columns the borders would take the room of three value columns
    table = Table(
        title=escape(title + pct),
        caption=escape("all runs: " + ", ".join(shared)) if shared else None,
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    labels = column_labels(shown)
    if "state" in shown and "steps" in shown and not report.grouped:
        shown_cols = [c for c in shown if c != "state"]
    else:
        shown_cols = shown
    for col in shown_cols:
        table.add_column(
            escape(labels[col]), justify="right" if report.kinds[col] == "metric" else "left", overflow="fold"
        )
    names = _strip_shared_suffix([str(r.get("run", "")) for r in report.rows])
    # one column for how far each run got: "120", or "45*" for a run that stopped early
    merged = shown_cols is not shown
    for row, name in zip(report.rows, names):
        cells = []
        for c in shown_cols:
            text = name if c == "run" else cell(report, row, c, compact=True)
            if merged and c == "steps" and row.get("state") != "finished":
                text += "*"
            cells.append(escape(text))
        table.add_row(*cells)
    if merged and any(r.get("state") != "finished" for r in report.rows):
        table.caption = (table.caption + "; " if table.caption else "") + "steps*: unfinished (stopped or running)"
    return table


def _strip_shared_suffix(names: list[str]) -> list[str]:
    """0-grpo-arithmetic, 1-grpo-arithmetic -> 0, 1 (the suffix repeats the caption)."""
    if len(names) < 2:
        return names
    suffix = os.path.commonprefix([n[::-1] for n in names])[::-1]
    suffix = suffix[suffix.find("-") :] if "-" in suffix else ""
    return [n[: len(n) - len(suffix)] for n in names] if suffix and all(len(n) > len(suffix) for n in names) else names


def _flat_record(report: Report, row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in report.columns:
        value = row.get(col)
        if isinstance(value, dict):
            out[col], out[f"{col}_std"], out[f"{col}_n"] = value["mean"], value["std"], value["n"]
        else:
            out[col] = value
    return out


def to_csv(report: Report) -> str:
    """Raw values (fractions, not %); a group's metric is three columns: M, M_std, M_n."""
    records = [_flat_record(report, r) for r in report.rows]
    header = list(dict.fromkeys(k for r in records for k in r)) if records else list(report.columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: "" if v is None else v for k, v in record.items()})
    return buf.getvalue()


def to_json(report: Report) -> str:
    return (
        json.dumps(
            {
                "columns": report.columns,
                "kinds": report.kinds,
                "grouped": report.grouped,
                "percent": sorted(report.percent),
                "rows": report.rows,
            },
            indent=2,
            default=str,
        )
        + "\n"
    )


def to_markdown(report: Report) -> str:
    """A table ready for a paper: accuracies in %, groups as mean ± std."""

    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [
        "| " + " | ".join(esc(c) for c in report.columns) + " |",
        "|" + "|".join("---:" if report.kinds[c] == "metric" else "---" for c in report.columns) + "|",
    ]
    lines += ["| " + " | ".join(esc(cell(report, r, c)) for c in report.columns) + " |" for r in report.rows]
    note = "\nAccuracies in %" + ("; mean ± sample std over the runs of a group." if report.grouped else ".")
    return "\n".join(lines) + ("\n" + note if report.percent else "") + "\n"


WRITERS: dict[str, tuple[str, Callable[[Report], str]]] = {
    "csv": ("report.csv", to_csv),
    "json": ("report.json", to_json),
    "md": ("report.md", to_markdown),
}


def make_report(
    paths: Sequence[str | Path],
    group_by: Sequence[str] = (),
    sort: str | None = None,
    descending: bool = False,
    where: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> Report:
    report = filter_rows(build_report(load_runs(paths, log)), where)
    if group_by:
        report = group_rows(report, group_by)
    return sort_rows(report, sort, descending)


def write_exports(
    report: Report, out_dir: Path | None = None, files: dict[str, Path | None] | None = None
) -> list[Path]:
    """`out_dir`: report.csv, report.json and report.md there; `files`: {csv|json|md: path}."""
    targets = {kind: out_dir / name for kind, (name, _) in WRITERS.items()} if out_dir else {}
    targets.update({k: Path(v).expanduser() for k, v in (files or {}).items() if v})
    written = []
    for kind, path in targets.items():
        with writing(path, "choose another --out (or --csv/--json/--md)"):
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text(path, WRITERS[kind][1](report))
        written.append(path)
    return written


def comparison_table(paths: Sequence[str | Path]) -> Table:
    """One row per run (see `build_report`), as a rich table."""
    return rich_table(make_report(paths))

"""`rlrecipes report`: one row per run (training and eval runs alike), filtered, grouped,
sorted, printed as a table and exported (csv, json, markdown)."""

from __future__ import annotations

import csv
import io
import json
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

from rlrecipes.display import left_cut
from rlrecipes.display import width as terminal_width
from rlrecipes.errors import UserError
from rlrecipes.eval.scoring import headline
from rlrecipes.rundir import write_text
from rlrecipes.runs.discover import Run, load_runs, number
from rlrecipes.storage import writing

# ------------------------------------------------------------------------- many runs
IDENTITY = ("recipe", "model", "data", "seed")
# Override keys that never change what a run computes (where it writes, how it shows progress)
_NOISE = re.compile(
    r"^(run_dir|output_root|cache_dir|resume|report_to|final_eval|progress|progress_every|"
    r"trainer\.progress|hydra[./].*|data_dir|generations)$"
)
_OPERATORS = ("!=", ">=", "<=", "=", ">", "<")


@dataclass
class Report:
    """Rows of raw values (fractions, numbers) keyed by column; `kinds` says what a column is:
    id (the run), param (a setting) or metric (a result: aggregated by --group-by)."""

    columns: list[str]
    kinds: dict[str, str]
    rows: list[dict[str, Any]]
    grouped: bool = False
    percent: set[str] = field(default_factory=set)  # metric columns that are fractions
    group_by: list[str] = field(default_factory=list)  # the --group-by columns (a grouped report's rows)


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
    rewards = [v for r in rows if (v := number(r.get("reward_mean"))) is not None]
    train_acc = [v for r in rows if (v := number(r.get("accuracy"))) is not None]
    heldout = [v for r in rows if (v := number(r.get("heldout_accuracy"))) is not None]
    before, after = number(s.get("accuracy_before")), number(s.get("accuracy_after"))
    best = max(heldout + ([after] if after is not None else []), default=None)
    steps = s.get("steps", max((r["step"] for r in rows if number(r.get("step")) is not None), default=None))
    return {
        "steps": steps,
        "heldout_before": before,
        "heldout_after": after,
        "gain": after - before if after is not None and before is not None else None,
        "heldout_best": best,
        "train_accuracy_final": train_acc[-1] if train_acc else None,
        "reward_final": rewards[-1] if rewards else None,
        "reward_best": max(rewards, default=None),
        # an SFT run's held-out loss (a pipeline's SFT stage: what it measures besides accuracy)
        "loss_before": number(s.get("loss_before")),
        "loss_after": number(s.get("loss_after")),
    }


def _eval_metrics(run: Run) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, m in run.summary.get("benchmarks", {}).items():
        out[name] = headline(m)[1] if isinstance(m, dict) else None
    if len(out) > 1:  # one benchmark's average is that benchmark's number: not a second column
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
    # a metric no run has (e.g. held-out accuracy with trainer.eval.after=false) is no column
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
    value = number(have)
    if value is None:
        return False
    try:
        limit = float(want)
    except ValueError:
        raise UserError(f"--where {condition!r}: {op} needs a number") from None
    return {">": value > limit, "<": value < limit, ">=": value >= limit, "<=": value <= limit}[op]


def filter_rows(report: Report, where: Sequence[str]) -> Report:
    rows = [r for r in report.rows if all(_matches(r, c) for c in where)]
    return Report(report.columns, report.kinds, rows, report.grouped, report.percent, report.group_by)


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
                vals = [v for m in members if (v := number(m.get(col))) is not None]
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
    return Report(columns, kinds, out, grouped=True, percent=report.percent, group_by=list(by))


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
        key=lambda r: (0, number(value(r))) if number(value(r)) is not None else (1, str(value(r))),
        reverse=descending,
    )
    rows = present + missing
    return Report(report.columns, report.kinds, rows, report.grouped, report.percent, report.group_by)


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


# which columns stay when a terminal is too narrow for all (first kept longest): the run, its
# headline results, what it is and how far it got, its other results, the settings that differ
_WHAT = ("steps", "state", "runs", "recipe", "model", "protocol", "data", "seed")
# a training run's other numbers: kept after what the runs are (an eval run's benchmark
# scores and average are headline results)
_SECONDARY = (
    "heldout_before",
    "heldout_best",
    "train_accuracy_final",
    "reward_final",
    "reward_best",
    "loss_before",
    "loss_after",
)
_CELL_CAP = 24  # a text cell wider than this is cut from the left: "…/toy/29f904068a87"


def _keep_order(report: Report, columns: Sequence[str]) -> list[str]:
    """`columns`, the first kept longest: the run, or a group's --group-by keys (what a row is)
    always stay (`_fit`)."""

    def rank(col: str) -> tuple[int, int]:
        kind = report.kinds.get(col)
        if col == "run":
            return (0, 0)
        if col in report.group_by:
            return (0, 1 + report.group_by.index(col))
        if kind == "metric" and col not in _SECONDARY:
            return (1, 0)
        if col in _WHAT:
            return (2, _WHAT.index(col))
        if kind == "metric":
            return (3, _SECONDARY.index(col))
        return (4, 0)  # a parameter

    return sorted(columns, key=lambda c: (rank(c), columns.index(c)))


def _fit(labels: dict[str, str], cells: dict[str, list[str]], order: list[str], width: int, keep: int = 1) -> set[str]:
    """The columns left out so that the rest fit `width` (two spaces between columns), dropping
    from the end of `order` but never its first `keep`; a header may wrap at its spaces, a value
    never."""

    def need(col: str) -> int:
        return max([len(w) for w in labels[col].split()] + [len(v) for v in cells[col]] + [1])

    dropped: set[str] = set()
    for col in reversed(order[keep:]):  # the run column (a group's keys) always stays
        kept = [c for c in order if c not in dropped]
        if sum(need(c) for c in kept) + 2 * (len(kept) - 1) <= width:
            break
        dropped.add(col)
    return dropped


def rich_table(report: Report, title: str = "rlrecipes report", width: int = 80) -> Table:
    """The table for a terminal: columns every row agrees on (recipe, model, ...) move to the
    caption, so `width` columns hold what tells the runs apart; what still does not fit is left
    out by priority (`_keep_order`) and named in the caption (the exports keep every column)."""
    shown, shared = [], []
    # a group's keys first: they say what each row is, as the run column does
    columns = [c for c in report.group_by if c in report.kinds] + [
        c for c in report.columns if c not in report.group_by
    ]
    for col in columns:
        distinct = {json.dumps(r.get(col), default=str) for r in report.rows}
        # an eval run's protocol stays on its row: it says how each number was measured
        if (
            report.kinds[col] != "metric"
            and col not in ("run", "protocol", *report.group_by)
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
    names = _strip_shared_suffix([str(r.get("run", "")) for r in report.rows])
    # one column for how far each run got: "120", or "45*" for a run that stopped early
    merged = shown_cols is not shown
    cells: dict[str, list[str]] = {c: [] for c in shown_cols}
    for row, name in zip(report.rows, names):
        for c in shown_cols:
            text = name if c == "run" else cell(report, row, c, compact=True)
            if merged and c == "steps" and row.get("state") != "finished":
                text += "*"
            cells[c].append(text if report.kinds.get(c) == "metric" else left_cut(text, _CELL_CAP))
    keep = ("run" in shown_cols) + len([c for c in report.group_by if c in shown_cols])
    dropped = _fit(labels, cells, _keep_order(report, list(shown_cols)), width - 2, keep=max(keep, 1))
    shown_cols = [c for c in shown_cols if c not in dropped]
    for col in shown_cols:
        metric = report.kinds[col] == "metric"
        # `_fit` made room for every value: one line each (a header may still wrap at its spaces)
        table.add_column(escape(labels[col]), justify="right" if metric else "left", no_wrap=not metric)
    for i in range(len(report.rows)):
        table.add_row(*(escape(cells[c][i]) for c in shown_cols))
    notes = [table.caption] if table.caption else []
    if merged and any(r.get("state") != "finished" for r in report.rows):
        notes.append("steps*: unfinished (stopped or running)")
    if dropped:
        left_out = ", ".join(labels[c] for c in _keep_order(report, list(dropped)))
        notes.append(escape(f"not shown at {width} columns: {left_out} (--csv, --md have every column)"))
    table.caption = "; ".join(notes) or None
    return table


def print_report(report: Report, notes: Sequence[str] = (), console: Console | None = None) -> None:
    """The table as `rlrecipes report` prints it, at the console's width, and the notes on
    what was skipped or left out below it, where they are read with it."""
    console = console or Console(width=terminal_width(), highlight=False)
    console.print(rich_table(report, width=console.width))
    for note in notes:
        console.print(f"note: {escape(note)}", highlight=False)


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

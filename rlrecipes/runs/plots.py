"""Plots of training runs: several runs' metrics on one figure (`rlrecipes plot DIR...
--metric reward,accuracy`), and one run's training vs held-out accuracy as a
dependency-free SVG (`rlrecipes plot RUN_DIR`).

Comparison figures (matplotlib, PNG and SVG) have one panel per metric and one line per
run, or with `--group-by` one line per group (the mean over its runs, e.g. seeds) with a
band of ± one standard deviation. They are written next to `rlrecipes report`'s table:
the sweep folder, or the folder the runs share.

One-shot RLVR's "post-saturation generalisation" is a picture: training accuracy on the
single example saturates early while held-out accuracy keeps rising. `rlrecipes plot
RUN_DIR` draws both from the run's `metrics.jsonl` (`accuracy` every logged step,
`heldout_accuracy` every `trainer.eval.every` steps), with the held-out accuracy before
and after training from `summary.json` as its first and last points.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Callable, Optional

from rlrecipes.errors import UserError
from rlrecipes.rundir import write_text
from rlrecipes.runs.discover import Run, find_runs, is_run, load_runs, metrics_note, read_metrics, read_summary
from rlrecipes.runs.report import build_report, cell, column_labels, group_rows
from rlrecipes.storage import writing

Series = list[tuple[float, float]]  # (step, accuracy)

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50  # margins around the plotting area
COLOURS = {"train": "#1f77b4", "heldout": "#d62728"}


@dataclass
class AccuracyCurves:
    train: Series
    heldout: Series


def read_curves(run_dir: str | Path, log: Callable[[str], None] = print) -> AccuracyCurves:
    """Both series of a run directory, sorted by step; NaN/missing points are left out, and so
    are lines that are no whole record (a torn last line), said through `log`."""
    run = Path(run_dir).expanduser()
    if not (run / "metrics.jsonl").is_file():
        raise UserError(f"{run} has no metrics.jsonl (is it a training run directory?)")
    rows, bad_lines, lines = read_metrics(run)
    summary = read_summary(run)
    if note := metrics_note(Run(run, summary, {}, {}, rows, bad_lines, lines)):
        log(note)
    train: dict[float, float] = {}
    heldout: dict[float, float] = {}
    for row in rows:
        for key, series in (("accuracy", train), ("heldout_accuracy", heldout)):
            if _finite(row.get(key)) and _finite(row.get("step")):
                series[float(row["step"])] = float(row[key])
    if summary:
        if _finite(summary.get("accuracy_before")):
            heldout.setdefault(0.0, float(summary["accuracy_before"]))
        if _finite(summary.get("accuracy_after")) and summary.get("steps") is not None:
            heldout.setdefault(float(summary["steps"]), float(summary["accuracy_after"]))
    return AccuracyCurves(sorted(train.items()), sorted(heldout.items()))


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def svg_plot(curves: AccuracyCurves, title: str = "accuracy") -> str:
    """An SVG line chart: x = step, y = accuracy in [0, 1], one polyline per series."""
    points = curves.train + curves.heldout
    if not points:
        raise UserError("nothing to plot: no 'accuracy' or 'heldout_accuracy' values in metrics.jsonl")
    x_max = max(step for step, _ in points) or 1.0
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def xy(step: float, acc: float) -> tuple[float, float]:
        return LEFT + plot_w * step / x_max, TOP + plot_h * (1.0 - acc)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):  # horizontal grid with accuracy labels
        _, y = xy(0, tick)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for k in range(5):  # step labels
        step = x_max * k / 4
        x, _ = xy(step, 0)
        parts.append(f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{step:g}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">step</text>')
    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    labels = {"train": "training accuracy", "heldout": "held-out accuracy"}
    for row, (name, series) in enumerate((("train", curves.train), ("heldout", curves.heldout))):
        colour = COLOURS[name]
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(s, a) for s, a in series))
        parts.append(
            f'<polyline class="{name}" data-points="{len(series)}" points="{coords}" '
            f'fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for x, y in (xy(s, a) for s, a in series):
            parts.append(f'<circle class="{name}" cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>')
        ly = TOP + 16 + 16 * row
        parts.append(
            f'<line x1="{LEFT + 10}" y1="{ly - 4}" x2="{LEFT + 30}" y2="{ly - 4}" stroke="{colour}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{LEFT + 36}" y="{ly}">{labels[name]} ({len(series)} points)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def plot_run(run_dir: str | Path, out: Optional[str | Path] = None, curves: Optional[AccuracyCurves] = None) -> Path:
    """Write the run's accuracy SVG (`curves`: already read, else read here); returns the file."""
    run = Path(run_dir).expanduser()
    target = Path(out).expanduser() if out else run / "accuracy.svg"
    svg = svg_plot(curves or read_curves(run), title=f"{run.name}: training vs held-out accuracy")
    with writing(target, "choose another --out"):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text(target, svg)
    return target


# ------------------------------------------------------------------ several runs
METRICS = {  # --metric names -> metrics.jsonl keys (any other key is used as written)
    "reward": "reward_mean",
    "accuracy": "accuracy",
    "heldout": "heldout_accuracy",
    "completion_length": "completion_length_mean",
    "length": "completion_length_mean",
    "entropy": "entropy",
    "kl": "kl",
    "loss": "loss",
    "clip_ratio": "clip_ratio_region",
    "truncated": "truncated_fraction",
    "grad_norm": "grad_norm",
    "update_ratio": "update_ratio",
    "policy_shift": "policy_shift",
    "step_time": "step_time",
}
DEFAULT_METRICS = ("reward", "accuracy", "heldout", "completion_length", "entropy", "kl")


def _series(rows: list[dict], key: str) -> Series:
    points = {float(r["step"]): float(r[key]) for r in rows if _finite(r.get(key)) and _finite(r.get("step"))}
    return sorted(points.items())


def _mean_band(curves: list[Series]) -> tuple[list[float], list[float], list[float]]:
    """Steps, mean and sample std over the runs that logged each step."""
    import statistics

    by_step: dict[float, list[float]] = {}
    for curve in curves:
        for step, value in curve:
            by_step.setdefault(step, []).append(value)
    steps = sorted(by_step)
    means = [statistics.fmean(by_step[s]) for s in steps]
    stds = [statistics.stdev(by_step[s]) if len(by_step[s]) > 1 else 0.0 for s in steps]
    return steps, means, stds


def _label(report, row: dict, keys: list[str]) -> str:
    labels = column_labels(keys)
    return ", ".join(f"{labels[k]}={cell(report, row, k)}" for k in keys)


def comparison_figure(
    paths, metrics: Optional[list[str]] = None, group_by: tuple[str, ...] = (), log: Callable[[str], None] = print
):
    """A matplotlib Figure: one panel per metric, one line per run (or per group, with a band).

    A run (or group) has one colour and one label in every panel, fixed before any panel is
    drawn, and each panel has its own legend of the lines it holds: a run that did not log a
    metric (DAPO logs no KL) is absent from that panel, and shifts no other run's colour."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise UserError(
            "comparison plots need matplotlib: pip install matplotlib (or pip install -e '.[plots]')"
        ) from None
    runs = [r for r in load_runs(paths, log) if r.kind == "train"]
    if not runs:
        raise UserError("nothing to plot: no training runs (metrics.jsonl) among the given folders")
    report = build_report(runs)
    keys = [METRICS.get(m, m) for m in (metrics or DEFAULT_METRICS)]
    present = [k for k in keys if any(_series(r.metrics, k) for r in runs)]
    if not present:
        raise UserError(f"nothing to plot: no run logged {', '.join(keys)} (see a run's metrics.jsonl)")
    if metrics and len(present) < len(keys):  # asked for by name: say which is absent, not drop it silently
        absent = sorted(set(keys) - set(present))
        raise UserError(f"no run logged {', '.join(absent)}; logged: {', '.join(_logged_keys(runs))}")
    varying = [
        c
        for c in report.columns
        if report.kinds[c] == "param"
        or (c in ("recipe", "model", "data", "seed") and len({str(r.get(c)) for r in report.rows}) > 1)
    ]
    if group_by:
        grouped = group_rows(report, list(group_by))
        group_keys = [
            c
            for c in grouped.columns
            if c in varying and c != "seed" and c in (list(group_by) if list(group_by) != ["auto"] else varying)
        ]
        lines = []
        for grow in grouped.rows:
            members = [i for i, row in enumerate(report.rows) if all(row.get(k) == grow.get(k) for k in group_keys)]
            lines.append((f"{_label(report, grow, group_keys) or 'all'} (n={len(members)})", members))
    else:
        lines = [(_label(report, row, varying) or row["run"], [i]) for i, row in enumerate(report.rows)]
    cols = min(3, len(present))
    rows_n = -(-len(present) // cols)
    fig = Figure(figsize=(5 * cols, 3.6 * rows_n), layout="constrained")
    axes = fig.subplots(rows_n, cols, squeeze=False).ravel()
    for ax, key in zip(axes, present):
        for index, (label, members) in enumerate(lines):
            curves = [c for i in members if (c := _series(runs[i].metrics, key))]
            if not curves:
                continue
            steps, mean, std = _mean_band(curves)
            colour, style = line_style(index)
            ax.plot(steps, mean, label=label, color=colour, linestyle=style, marker="." if len(steps) < 30 else None)
            if len(members) > 1:
                ax.fill_between(
                    steps,
                    [m - s for m, s in zip(mean, std)],
                    [m + s for m, s in zip(mean, std)],
                    color=colour,
                    alpha=0.2,
                    linewidth=0,
                )
        ax.set_title(key)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes[len(present) :]:
        ax.set_visible(False)
    return fig


def line_style(index: int) -> tuple[str, str]:
    """The colour and line style of the `index`-th run or group, the same in every panel:
    matplotlib's ten default colours, then the same colours dashed, dotted, dash-dotted."""
    return f"C{index % 10}", ("-", "--", ":", "-.")[(index // 10) % 4]


def _logged_keys(runs) -> list[str]:
    return sorted({k for r in runs for row in r.metrics for k, v in row.items() if _finite(v)} - {"step"})


def default_out_dir(paths) -> Path:
    """Next to the report's table: the one folder given, else the folder the runs share."""
    import os

    given = [Path(p).expanduser() for p in paths]
    if len(given) == 1 and given[0].is_dir() and not is_run(given[0]):
        return given[0]
    runs = find_runs(paths, log=lambda _: None)  # the caller has said what it skipped
    return Path(os.path.commonpath([str(r.resolve()) for r in runs])) if len(runs) > 1 else runs[0]


def plot_comparison(
    paths,
    metrics: Optional[list[str]] = None,
    group_by: tuple[str, ...] = (),
    out: Optional[Path] = None,
    name: str = "comparison",
    log: Callable[[str], None] = print,
) -> tuple[Any, list[Path]]:
    """Write NAME.png and NAME.svg; returns the figure and the files."""
    fig = comparison_figure(paths, metrics, group_by, log)
    out_dir = Path(out).expanduser() if out else default_out_dir(paths)
    files = [out_dir / f"{name}.png", out_dir / f"{name}.svg"]
    for path in files:
        with writing(path, "choose another --out"):
            out_dir.mkdir(parents=True, exist_ok=True)
            fig.savefig(path, dpi=120)
    return fig, files

"""Training and held-out accuracy of one run on one plot, as a dependency-free SVG.

One-shot RLVR's "post-saturation generalisation" is a picture: training accuracy on the
single example saturates early while held-out accuracy keeps rising. `rlrecipes plot
RUN_DIR` draws both from the run's `metrics.jsonl` (`accuracy` every logged step,
`heldout_accuracy` every `trainer.eval_every` steps), with the held-out accuracy before
and after training from `summary.json` as its first and last points.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Annotated, Optional

import typer

from rlrecipes.errors import UserError

Series = list[tuple[float, float]]  # (step, accuracy)

WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 50  # margins around the plotting area
COLOURS = {"train": "#1f77b4", "heldout": "#d62728"}


@dataclass
class AccuracyCurves:
    train: Series
    heldout: Series


def read_curves(run_dir: str | Path) -> AccuracyCurves:
    """Both series of a run directory, sorted by step; NaN/missing points are left out."""
    run = Path(run_dir).expanduser()
    metrics = run / "metrics.jsonl"
    if not metrics.is_file():
        raise UserError(f"{run} has no metrics.jsonl (is it a training run directory?)")
    train: dict[float, float] = {}
    heldout: dict[float, float] = {}
    for line in metrics.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        for key, series in (("accuracy", train), ("heldout_accuracy", heldout)):
            if _finite(row.get(key)) and "step" in row:
                series[float(row["step"])] = float(row[key])
    summary_file = run / "summary.json"
    if summary_file.is_file():
        summary = json.loads(summary_file.read_text())
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

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
             f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
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
        parts.append(f'<polyline class="{name}" data-points="{len(series)}" points="{coords}" '
                     f'fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in (xy(s, a) for s, a in series):
            parts.append(f'<circle class="{name}" cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{colour}"/>')
        ly = TOP + 16 + 16 * row
        parts.append(f'<line x1="{LEFT + 10}" y1="{ly - 4}" x2="{LEFT + 30}" y2="{ly - 4}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{LEFT + 36}" y="{ly}">{labels[name]} ({len(series)} points)</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def plot_run(run_dir: str | Path, out: Optional[str | Path] = None) -> Path:
    run = Path(run_dir).expanduser()
    target = Path(out).expanduser() if out else run / "accuracy.svg"
    target.write_text(svg_plot(read_curves(run), title=f"{run.name}: training vs held-out accuracy"))
    return target


def plot_command(
    run_dir: Annotated[Path, typer.Argument(help="a training run directory (holds metrics.jsonl)")],
    out: Annotated[Optional[Path], typer.Option(help="SVG file to write (default: RUN_DIR/accuracy.svg)")] = None,
) -> None:
    """Plot training and held-out accuracy against step (SVG); held-out needs trainer.eval_every."""
    target = plot_run(run_dir, out)
    curves = read_curves(run_dir)
    typer.echo(f"wrote {target} ({len(curves.train)} training, {len(curves.heldout)} held-out points)")

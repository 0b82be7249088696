"""`rlrecipes plot`: figures of one run or of several runs side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rlrecipes.commands.help import help_with
from rlrecipes.runs.discover import find_runs
from rlrecipes.runs.plots import default_out_dir, plot_comparison, plot_run, read_curves


def plot_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="run directories, folders holding runs (a sweep) or globs")],
    metric: Annotated[
        Optional[str],
        typer.Option(
            help="comma list: reward, accuracy, heldout, completion_length, entropy, kl, loss, clip_ratio, "
            "truncated, grad_norm, step_time, or any metrics.jsonl key"
        ),
    ] = None,
    group_by: Annotated[
        Optional[str],
        typer.Option(
            "--group-by", help="one line per group (mean ± std band over its runs), e.g. trainer.learning_rate"
        ),
    ] = None,
    out: Annotated[
        Optional[Path],
        typer.Option(
            help="folder for comparison.png/.svg (default: the sweep folder); with one run and no --metric, "
            "the SVG file of its accuracy plot (default RUN_DIR/accuracy.svg)"
        ),
    ] = None,
) -> None:
    """Plot runs: several runs' metrics on one figure (PNG + SVG); one run alone: training vs
    held-out accuracy (SVG)."""
    paths = [str(p) for p in run_dirs]
    runs = find_runs(paths, log=_note)
    if len(runs) == 1 and metric is None and group_by is None:
        curves = read_curves(runs[0], log=_note)
        target = plot_run(runs[0], out, curves)
        typer.echo(f"wrote {target} ({len(curves.train)} training, {len(curves.heldout)} held-out points)")
        return
    metrics = [m.strip() for m in metric.split(",") if m.strip()] if metric else None
    groups = tuple(k.strip() for k in group_by.split(",") if k.strip()) if group_by else ()
    # the runs found above (whose skipped folders are said), written where the paths given say
    _, files = plot_comparison(runs, metrics, groups, out or default_out_dir(paths), log=_note)
    typer.echo(f"wrote {files[0]} and {files[1]} ({len(runs)} runs)")


def _note(message: str) -> None:
    typer.echo(f"note: {message}")


def register(app: typer.Typer) -> None:
    app.command(
        "plot",
        **help_with(
            "rlrecipes plot RUN                     # RUN/accuracy.svg",
            "rlrecipes plot outputs/multirun/DATE --metric reward,heldout",
        ),
    )(plot_command)

"""`rlrecipes show`: a training step's stored rollouts, as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.errors import UserError
from rlrecipes.runs.discover import is_run
from rlrecipes.runs.sample_view import render_step
from rlrecipes.step_samples import read_step, stored_steps


def show(
    run_dir: Path = typer.Argument(..., help="A run directory trained with trainer.log_samples_every."),
    step: Optional[int] = typer.Option(None, "--step", help="The step to show (default: the last stored)."),
    as_json_flag: bool = typer.Option(False, "--json", help="Print the samples as JSON."),
) -> None:
    """Print a step's stored samples: prompts, completions, rewards, advantages, tool turns."""
    if not run_dir.is_dir() or not is_run(run_dir):
        raise UserError(f"{run_dir}: not a run directory (it holds no config.yaml, metrics.jsonl or summary.json)")
    if step is None:
        steps = stored_steps(run_dir)
        step = steps[-1] if steps else 0  # 0: read_step names what is missing
    found = read_step(run_dir, step)
    if as_json_flag:
        out = {"run": str(run_dir), "step": found.step, "samples": found.rows, "skipped": found.skipped}
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return
    render_step(found, str(run_dir), console)


def register(app: typer.Typer) -> None:
    app.command(
        "show",
        **help_with(
            "rlrecipes train trainer.log_samples_every=10 run_dir=R   # keep samples",
            "rlrecipes show R --step 10",
            "rlrecipes show R --json                 # the last stored step, as JSON",
        ),
    )(show)

"""`rlrecipes doctor`: a verdict on each training run, from its directory alone."""

from __future__ import annotations

import json
from typing import List

import typer

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.doctor.diagnose import diagnose, exit_code
from rlrecipes.doctor.reading import read_runs
from rlrecipes.doctor.verdict import as_json, render
from rlrecipes.errors import UserError


def doctor(
    run_dirs: List[str] = typer.Argument(..., help="Run directories, a sweep or stages folder, or globs."),
    as_json_flag: bool = typer.Option(False, "--json", help="Print the verdicts as JSON."),
) -> None:
    """Check training runs for silent failures: healthy, or each finding with its evidence and fix.

    Reads only the run directory: config.yaml, metrics.jsonl, summary.json, samples/.
    Exit status: 0 healthy, 1 findings, 2 a run it could not read (or no run at all).
    """
    notes: list[str] = []
    verdicts = [diagnose(record) for record in read_runs(run_dirs, notes.append)]
    if len(verdicts) == 1 and verdicts[0].unreadable and not as_json_flag:
        raise UserError(verdicts[0].unreadable)  # one run, nothing to check: one line
    if as_json_flag:
        typer.echo(json.dumps(as_json(verdicts), indent=2))
    else:
        for note in notes:
            console.print(f"note: {note}", highlight=False, soft_wrap=True, markup=False)
        render(verdicts, console)
    raise typer.Exit(exit_code(verdicts))


def register(app: typer.Typer) -> None:
    app.command(
        "doctor",
        **help_with(
            "rlrecipes doctor outputs/my-run              # one run",
            "rlrecipes doctor outputs/multirun/DATE       # a sweep: a verdict per run",
            "rlrecipes doctor outputs/my-run --json       # findings for a script",
        ),
    )(doctor)

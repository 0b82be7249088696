"""`rlrecipes report`: one table comparing runs (and sweeps), with exports."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.runs.report import make_report, print_report, write_exports


def report(
    run_dirs: List[str] = typer.Argument(..., help="Run directories, folders holding runs (a sweep) or globs."),
    group_by: Optional[str] = typer.Option(
        None,
        "--group-by",
        help="Columns whose runs fold into mean ± std "
        "(e.g. recipe,trainer.learning_rate); auto = every parameter but seed.",
    ),
    sort: Optional[str] = typer.Option(None, "--sort", help="Column to sort by."),
    desc: bool = typer.Option(False, "--desc", help="Sort descending."),
    where: List[str] = typer.Option(
        [], "--where", help="Keep rows where KEY=VALUE (also !=, >, <, >=, <=); repeatable."
    ),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for report.csv, report.json and report.md."),
    csv: Optional[str] = typer.Option(None, "--csv", help="CSV file to write (raw fractions)."),
    json_file: Optional[str] = typer.Option(None, "--json", help="JSON file to write."),
    md: Optional[str] = typer.Option(None, "--md", help="Markdown file to write (a table for a paper)."),
) -> None:
    """Compare runs: one row each (state, recipe, model, data, seed, the parameters that differ,
    final and best metrics)."""
    groups = [k.strip() for k in group_by.split(",") if k.strip()] if group_by else []
    notes: list[str] = []
    table = make_report(run_dirs, groups, sort, desc, where, log=notes.append)
    print_report(table, notes, console)
    for path in write_exports(table, Path(out) if out else None, {"csv": csv, "json": json_file, "md": md}):
        console.print(f"wrote {path}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command(
        **help_with(
            "rlrecipes report outputs/multirun/DATE        # a sweep: one row per run",
            "rlrecipes report 'outputs/*grpo*' --group-by recipe --md table.md",
        )
    )(report)

"""`rlrecipes save-benchmark`: copy benchmarks from the hub to a folder, for machines without network."""

from __future__ import annotations

from typing import List

import typer

from rlrecipes.commands.help import help_with
from rlrecipes.eval.benchmarks import resolve_benchmarks, save_benchmark


def save_benchmarks(
    names: str = typer.Argument(..., help="Benchmarks or suites, comma-separated (math500,aime24 or paper_suite)."),
    folder: str = typer.Argument(..., help="Where to write them (DIR/NAME/hub/SPLIT.jsonl); give it as data_dir=DIR."),
) -> None:
    """Save benchmarks from the hub to DIR as JSONL; on a machine without network, eval reads them with data_dir=DIR."""
    saved: List[str] = []
    for name in resolve_benchmarks(names):
        path, rows = save_benchmark(name, folder)
        typer.echo(f"{name}: {rows} rows -> {path}")
        saved.append(name)
    typer.echo(f"offline: rlrecipes eval benchmark={','.join(saved)} data_dir={folder} model.name_or_path=...")


def register(app: typer.Typer) -> None:
    app.command(
        "save-benchmark",
        **help_with(
            "rlrecipes save-benchmark math500,aime24 ~/benchmarks     # on a machine with network",
            "rlrecipes eval benchmark=math500 data_dir=~/benchmarks ...  # then, on the offline one",
        ),
    )(save_benchmarks)

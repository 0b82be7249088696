"""`rlrecipes select`: one-shot RLVR's data selection from an accuracy history."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.runs.selection import load_history, ranking_problem, rows_for, select, selection_records, write_jsonl


def select_command(
    history: Annotated[Path, typer.Argument(help="accuracy history json (id -> list of accuracies)")],
    method: Annotated[str, typer.Option(help="score to rank by: variance | std")] = "variance",
    top: Annotated[int, typer.Option(help="how many examples to keep (π1..πK)")] = 1,
    data: Annotated[Optional[Path], typer.Option(help="dataset the history indexes; write its rows")] = None,
    id_field: Annotated[
        Optional[str], typer.Option(help="column holding the history's ids (default: row index)")
    ] = None,
    out: Annotated[Optional[Path], typer.Option(help="output .jsonl (default: ./selected_METHOD_topK.jsonl)")] = None,
) -> None:
    """Rank examples by the variance of their accuracy history and write the top K.

    With --data, writes the chosen examples' full rows (a dataset to train on);
    otherwise their ids with their scores.
    """
    scores = load_history(history)
    chosen = select(scores, top, method)
    problem = ranking_problem(scores, chosen)
    if problem:
        console.print(f"[bold yellow]warning:[/] {escape(problem)}", highlight=False)
    records = selection_records(chosen, method)
    rows = rows_for(chosen, data, id_field) if data is not None else records
    target = out or Path(f"selected_{method}_top{top}.jsonl")
    write_jsonl(target, rows)
    table = Table(title=f"top {top} of {Path(history).name} by {method}")
    for col in ("rank", "id", method, "samples"):
        table.add_column(col, justify="right")
    for c in chosen[:20]:
        table.add_row(f"π{c.rank}", c.id, f"{c.score:.6f}", str(c.samples))
    console.print(table)
    what = "rows" if data is not None else "ids and scores"
    console.print(f"wrote {len(rows)} {what} to {target}")


def register(app: typer.Typer) -> None:
    app.command(
        "select",
        **help_with(
            "rlrecipes select H/accuracy_history.json --top 1   # prints π1's id",
            "rlrecipes select H.json --top 2 --data train.jsonl --out pi.jsonl",
        ),
    )(select_command)

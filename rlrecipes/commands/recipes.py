"""`rlrecipes recipes`: the registered recipes."""

from __future__ import annotations

import typer
from rich.table import Table

from rlrecipes.commands.common import console
from rlrecipes.commands.help import help_with
from rlrecipes.recipes import load_all


def recipes() -> None:
    """Table of the registered recipes: name, paper, idea, status."""
    table = Table(title="rlrecipes recipes")
    for col in ("name", "paper", "idea", "status"):
        table.add_column(col, overflow="fold")
    for name, cls in sorted(load_all().items()):
        table.add_row(name, cls.paper, cls.idea, cls.status)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command(**help_with("rlrecipes recipes"))(recipes)

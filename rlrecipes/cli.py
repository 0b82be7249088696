"""The `rlrecipes` command line: the Typer app assembled from `rlrecipes.commands`.

Each command is a module with `register(app)`; it is imported only when its command runs
(or when `rlrecipes --help` lists them all), so `rlrecipes report` does not pay for the
torch, transformers and vLLM imports that `train` and `eval` need.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, List, Optional

import click
import typer
from typer.core import TyperGroup

from rlrecipes.commands.common import fail
from rlrecipes.errors import UserError

# command name -> module of rlrecipes.commands, in the order `rlrecipes --help` lists them
COMMANDS = {
    "recipes": "recipes",
    "train": "train",
    "eval": "evaluate",
    "report": "report",
    "plot": "plot",
    "select": "select",
    "eval-checkpoints": "eval_checkpoints",
    "spurious-labels": "spurious_labels",
    "judge-pairs": "judge",
    "judge-eval": "judge",
    "launch-config": "launch",
    "config": "config",
}


class LazyCommands(TyperGroup):
    """A command group whose commands are built from their module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"rlrecipes.commands.{COMMANDS[name]}")
        commands = typer.Typer()
        module.register(commands)
        group = typer.main.get_group(commands)
        return group.get_command(ctx, name)


app = typer.Typer(
    cls=LazyCommands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine.",
)


@app.callback()
def _root() -> None:
    """Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine."""


def main(argv: Optional[List[str]] = None) -> Any:
    """Console-script entry point: user errors become one line and exit status 2."""
    try:
        app(args=argv if argv is not None else sys.argv[1:], standalone_mode=True)
    except UserError as exc:
        fail(str(exc))


if __name__ == "__main__":
    # through the imported module, so joblib workers pickle the job functions by reference
    # (defined in __main__ they would be shipped by value, with this module's Console and its lock)
    from rlrecipes.cli import main as _main

    _main()

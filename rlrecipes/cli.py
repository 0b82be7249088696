"""The `rlrecipes` command line: the Typer app assembled from `rlrecipes.commands`."""

from __future__ import annotations

import sys
from typing import List, Optional

import typer

from rlrecipes.commands import (
    config,
    eval_checkpoints,
    evaluate,
    launch,
    plot,
    recipes,
    report,
    select,
    spurious_labels,
    train,
)
from rlrecipes.commands.common import fail
from rlrecipes.errors import UserError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine.",
)
# in the order `rlrecipes --help` lists them
for command in (recipes, train, evaluate, report, plot, select, eval_checkpoints, spurious_labels, launch, config):
    command.register(app)


def main(argv: Optional[List[str]] = None) -> None:
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

"""`rlrecipes eval-checkpoints`: one-shot RLVR's checkpoint sweep and model selection."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from rlrecipes.commands.common import OVERRIDES, console
from rlrecipes.commands.help import help_with
from rlrecipes.display import print_titled

if TYPE_CHECKING:
    from rlrecipes.runs.checkpoints import Selection


def eval_checkpoints_command(
    ctx: typer.Context,
    run_dir: Annotated[Path, typer.Argument(help="training run directory (checkpoints/ and model/)")],
    suite: Annotated[str, typer.Option(help="paper (six benchmarks) | synthetic (held-out split)")] = "paper",
    every: Annotated[int, typer.Option(help="evaluate checkpoints whose step is a multiple of this")] = 1,
    base: Annotated[bool, typer.Option(help="also evaluate the starting model as step 0")] = True,
    out: Annotated[Optional[Path], typer.Option(help="output folder (default: RUN_DIR/checkpoint_eval_SUITE)")] = None,
) -> None:
    """Evaluate a run's checkpoints on a suite; report the best-average and the last one.

    Extra key=value arguments go to every eval run (e.g. data_dir=DIR
    generation.backend=vllm limit=50).
    """
    from rlrecipes.runs.checkpoints import eval_checkpoints  # torch and transformers: only when it runs

    selection = eval_checkpoints(run_dir, suite, list(ctx.args), out, base, every, log=console.log)
    print_titled(console, selection_table(selection), "", run_dir, f": {suite} suite (%)")
    best, last = selection.best_step, selection.last_step
    console.print(
        f"best average: step {best} ({100 * selection.averages[best]:.1f}); "
        f"last: step {last} ({100 * selection.averages[last]:.1f})"
    )


def selection_table(selection: Selection) -> Table:
    names = list(selection.scores[selection.steps[0]])
    table = Table()
    for col in ("step", *names, "average", ""):
        table.add_column(escape(col), justify="right")
    for step in selection.steps:
        marks = [m for m, s in (("best average", selection.best_step), ("last", selection.last_step)) if s == step]
        table.add_row(
            str(step),
            *(f"{100 * selection.scores[step][n]:.1f}" for n in names),
            f"{100 * selection.averages[step]:.1f}",
            ", ".join(marks),
        )
    return table


def register(app: typer.Typer) -> None:
    app.command(
        "eval-checkpoints",
        context_settings=OVERRIDES,
        **help_with(
            "rlrecipes eval-checkpoints RUN --suite synthetic",
            "rlrecipes eval-checkpoints RUN --every 100 data_dir=DIR limit=50",
        ),
    )(eval_checkpoints_command)

"""`rlrecipes sft`: the supervised fine-tuning job (`rlrecipes.training.sft`) as a
Hydra-composed command (`run_command.RunCommand`: dry runs, sweeps, resume and run
directories as `train` has them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from rlrecipes.commands.common import OVERRIDES, console
from rlrecipes.commands.help import help_with
from rlrecipes.commands.run_command import RunCommand, invoke
from rlrecipes.data.problems import data_label
from rlrecipes.display import print_titled


def sft(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
    dry: bool = typer.Option(
        False, "--dry-run", help="Run every check and print the run's plan; load nothing, write nothing."
    ),
) -> None:
    """Supervised fine-tuning (TRL SFTTrainer); RUN/model feeds train and eval as model.name_or_path. Takes Hydra overrides key=value."""
    invoke(SFT, list(ctx.args), multirun, dry)


# The job is imported only once Hydra has composed the config: it imports TRL, and TRL imports
# the optional vLLM, which logs on import (a mistyped key would no longer be one line).
def check_config(cfg: Any) -> None:
    """`rlrecipes.training.sft_plan.check_sft` without the machine checks (a Slurm job may run elsewhere)."""
    from rlrecipes.training.sft_plan import check_sft

    check_sft(cfg, hardware=False)


def _plan_rows(cfg: Any) -> list[tuple[str, str]]:
    from rlrecipes.training.sft_plan import dry_run

    return dry_run(cfg)


def _resumed(cfg: Any, overrides: list[str]) -> tuple[Any, list]:
    from rlrecipes.training.sft_resume import resumed_sft_config

    return resumed_sft_config(cfg, overrides)


def _reopen(cfg: Any, changes: list) -> Path:
    from rlrecipes.training.resume import reopen_run_dir

    return reopen_run_dir(cfg, changes, log=console.log)


def _run(cfg: Any, run_dir: Path) -> dict:
    from rlrecipes.training.sft import sft as run_sft

    return run_sft(cfg, run_dir, log=console.log)


def print_summary(summary: dict, run_dir: Any) -> None:
    table = Table()
    table.add_column("held-out")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for name in ("loss", "accuracy"):
        values = [summary.get(f"{name}_{when}") for when in ("before", "after")]
        table.add_row(f"{name} ({'completion tokens' if name == 'loss' else 'greedy'})", *_cells(values))
    print_titled(console, table, "run", run_dir)
    console.print(
        f"{summary.get('steps')} steps in {summary.get('wall_seconds', 0):.0f} s; model: {run_dir}/model "
        f"(rlrecipes train model.name_or_path={run_dir}/model)",
        highlight=False,
        soft_wrap=True,
    )


def _cells(values: list) -> list[str]:
    return ["n/a" if v is None else f"{v:.3f}" for v in values]


SFT = RunCommand(
    name="sft",
    label=lambda cfg: f"sft-{data_label(cfg.data)}",
    check=check_config,
    plan_rows=_plan_rows,
    resumed=_resumed,
    reopen=_reopen,
    run=_run,
    print_summary=print_summary,
    result_key="loss_after",
)


def register(app: typer.Typer) -> None:
    app.command(
        context_settings=OVERRIDES,
        **help_with(
            "rlrecipes sft                                     # the toy's arithmetic, completion-only loss",
            "rlrecipes sft data.source=file data.path=sft.jsonl data.completion_field=solution",
            "rlrecipes sft resume=true run_dir=RUN             # continue from its last checkpoint",
            "rlrecipes train model.name_or_path=RUN/model      # RL from the SFT model",
        ),
    )(sft)

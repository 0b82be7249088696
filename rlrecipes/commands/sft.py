"""`rlrecipes sft`: the Hydra job around the supervised fine-tuning job (`rlrecipes.training.sft`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

import typer
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from rich.table import Table

from rlrecipes import rundir
from rlrecipes.commands.common import OVERRIDES, console, fail, run_job
from rlrecipes.compose.hydra_app import compose_jobs, run_hydra
from rlrecipes.data.problems import data_label
from rlrecipes.errors import UserError
from rlrecipes.rundir import (
    create_run_dir,
    discard_unstarted_run,
    drop_hydra_job_dir,
    is_main_process,
    shared_run_dir,
    write_manifest,
)
from rlrecipes.training.resume import reopen_run_dir
from rlrecipes.training.sft_resume import resumed_sft_config


def sft(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
    dry: bool = typer.Option(
        False, "--dry-run", help="Run every check and print the run's plan; load nothing, write nothing."
    ),
) -> None:
    """Supervised fine-tuning (TRL SFTTrainer); RUN/model feeds train and eval as model.name_or_path. Takes Hydra overrides key=value."""
    overrides = list(ctx.args)
    if dry:
        print_plans(overrides, multirun)
        return
    resumed = resumed_job(overrides, multirun)
    if resumed is not None:
        cfg, changes = resumed
        check_config(cfg)
        rundir.invocation = list(sys.argv)
        run_sft_job(cfg, lambda: reopen_run_dir(cfg, changes, log=console.log))
        return
    run_hydra("sft", sft_job, overrides, multirun, check=check_config)


def resumed_job(overrides: list[str], multirun: bool) -> tuple[Any, list] | None:
    """For `resume=true run_dir=R`: the run's saved config with the command line's explicit keys
    on top, and those changes; None for a new run."""
    try:
        jobs = compose_jobs("sft", overrides, multirun)
        if not any(cfg.resume for _, cfg in jobs):
            return None
        if multirun:
            raise UserError("resume=true continues one run: leave out -m and resume each run with its own run_dir")
        return resumed_sft_config(jobs[0][1], overrides)
    except UserError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits


# The job is imported only once Hydra has composed the config: it imports TRL, and TRL imports
# the optional vLLM, which logs on import (a mistyped key would no longer be one line).
def check_config(cfg: Any) -> None:
    """`rlrecipes.training.sft_plan.check_sft` without the machine checks (a Slurm job may run elsewhere)."""
    from rlrecipes.training.sft_plan import check_sft

    check_sft(cfg, hardware=False)


def print_plans(overrides: list[str], multirun: bool) -> None:
    from rlrecipes.training.sft_plan import dry_run

    jobs = compose_jobs("sft", overrides, multirun)
    resumed = resumed_job(overrides, multirun)
    if resumed is not None:
        jobs = [(overrides, resumed[0])]
    for job, cfg in jobs:
        table = Table(title=f"rlrecipes sft --dry-run {' '.join(job)}".rstrip(), show_header=False)
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for what, value in dry_run(cfg):
            table.add_row(what, value)
        console.print(table)
    console.print(f"checked {len(jobs)} run(s): nothing was loaded or written", highlight=False)


def sft_job(cfg: Any) -> float | None:
    """The Hydra task: one new SFT run; returns the held-out loss after (lower is better)."""
    hc = HydraConfig.get()
    is_multirun = hc.mode == RunMode.MULTIRUN

    def create() -> Path:
        run_dir = create_run_dir(
            cfg.run_dir,
            cfg.output_root,
            f"sft-{data_label(cfg.data)}",
            job_num=hc.job.num if is_multirun else None,
            sweep_dir=hc.sweep.dir if is_multirun else None,
            command="sft",
        )
        if is_multirun:
            drop_hydra_job_dir(run_dir)
        write_manifest(run_dir, cfg)
        return run_dir

    return run_sft_job(cfg, create)


def run_sft_job(cfg: Any, create: Callable[[], Path]) -> float | None:
    from rlrecipes.training.sft import SFTInterrupted
    from rlrecipes.training.sft import sft as run_sft

    main = is_main_process()
    try:
        run_dir = shared_run_dir(create, cpu=bool(cfg.trainer.use_cpu))
    except UserError as exc:
        fail(str(exc))

    def body() -> dict:
        if main:
            console.rule(f"[bold]sft[/] on {data_label(cfg.data)} -> {run_dir}")
        try:
            return run_sft(cfg, run_dir, log=console.log)
        except SFTInterrupted as exc:
            if main:
                console.print(f"[bold yellow]interrupted:[/] {exc}", highlight=False, soft_wrap=True)
            raise SystemExit(128 + exc.signal) from None

    def discard() -> None:
        if main and not cfg.resume:
            discard_unstarted_run(run_dir)

    summary = run_job(body, discard)
    if main:
        print_summary(summary, run_dir)
    return summary.get("loss_after")


def print_summary(summary: dict, run_dir: Any) -> None:
    table = Table(title=f"run {run_dir}")
    table.add_column("held-out")
    table.add_column("before", justify="right")
    table.add_column("after", justify="right")
    for name in ("loss", "accuracy"):
        values = [summary.get(f"{name}_{when}") for when in ("before", "after")]
        table.add_row(f"{name} ({'completion tokens' if name == 'loss' else 'greedy'})", *_cells(values))
    console.print(table)
    console.print(
        f"{summary.get('steps')} steps in {summary.get('wall_seconds', 0):.0f} s; model: {run_dir}/model "
        f"(rlrecipes train model.name_or_path={run_dir}/model)",
        highlight=False,
        soft_wrap=True,
    )


def _cells(values: list) -> list[str]:
    return ["n/a" if v is None else f"{v:.3f}" for v in values]


def register(app: typer.Typer) -> None:
    app.command(context_settings=OVERRIDES)(sft)

"""`rlrecipes train`: the Hydra job around the training job (`rlrecipes.training`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from rich.table import Table

from rlrecipes import rundir
from rlrecipes.commands.common import OVERRIDES, console, fail, run_job
from rlrecipes.commands.help import hydra_help
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


def train(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
    dry: bool = typer.Option(
        False, "--dry-run", help="Run every check and print the run's plan; load nothing, write nothing."
    ),
) -> None:
    """Train with RL (no arguments: the CPU quick-start). Takes Hydra overrides key=value."""
    overrides = list(ctx.args)
    if dry:
        print_plans(overrides, multirun)
        return
    resumed = resumed_job(overrides, multirun)
    if resumed is not None:
        cfg, changes = resumed
        check_config(cfg)
        rundir.invocation = list(sys.argv)
        run_training_job(cfg, lambda: _reopen(cfg, changes))
        return
    # every job of a sweep is checked before the first starts; the machine (CUDA, vLLM) by the
    # job itself, which may run elsewhere (a Slurm launcher)
    run_hydra("train", train_job, overrides, multirun, check=check_config)


def resumed_job(overrides: list[str], multirun: bool) -> tuple[Any, list] | None:
    """For `resume=true run_dir=R`: the run's saved config with the command line's explicit
    keys on top (`rlrecipes.training.resume`), and those changes; None for a new run. A resume runs
    without Hydra's job machinery: its settings come from the run, not from composition."""
    try:
        jobs = compose_jobs("train", overrides, multirun)
        if not any(cfg.resume for _, cfg in jobs):
            return None
        if multirun:
            raise UserError("resume=true continues one run: leave out -m and resume each run with its own run_dir")
        from rlrecipes.training.resume import resumed_config

        return resumed_config(jobs[0][1], overrides)
    except UserError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits


# The training job is imported only once Hydra has composed the config: it imports TRL, and
# TRL imports the optional vLLM when installed, which logs on import, so a mistyped key
# would no longer be the one line of its report.
def check_config(cfg: Any) -> None:
    """`rlrecipes.training.plan.plan_run` without the machine checks (a Slurm job may run
    elsewhere); the plan is kept for a job that runs in this process."""
    from omegaconf import OmegaConf

    from rlrecipes.training.plan import plan_run

    PLANS[OmegaConf.to_yaml(cfg, resolve=True)] = plan_run(cfg, hardware=False)


# the plans the sweep check made, by config: an in-process job takes its own instead of
# planning again (`RunPlan.at` names it after the run directory the job gets)
PLANS: dict[str, Any] = {}


def _reopen(cfg: Any, changes: list) -> Path:
    from rlrecipes.training.resume import reopen_run_dir

    return reopen_run_dir(cfg, changes, log=console.log)


def print_plans(overrides: list[str], multirun: bool) -> None:
    """`--dry-run`: each job's plan (`rlrecipes.training.dry_run`) as a table."""
    from rlrecipes.training.plan import dry_run

    jobs = compose_jobs("train", overrides, multirun)
    resumed = resumed_job(overrides, multirun)
    if resumed is not None:  # the plan of the run as it will continue
        jobs = [(overrides, resumed[0])]
    for job, cfg in jobs:
        table = Table(title=f"rlrecipes train --dry-run {' '.join(job)}".rstrip(), show_header=False)
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for what, value in dry_run(cfg):
            table.add_row(what, value)
        console.print(table)
    console.print(f"checked {len(jobs)} run(s): nothing was loaded or written", highlight=False)


def train_job(cfg: Any) -> Optional[float]:
    """The Hydra task: one new training run; returns the held-out accuracy after (for sweepers)."""
    hc = HydraConfig.get()
    is_multirun = hc.mode == RunMode.MULTIRUN

    def create():
        run_dir = create_run_dir(
            cfg.run_dir,
            cfg.output_root,
            f"{cfg.recipe.name}-{data_label(cfg.data)}",
            job_num=hc.job.num if is_multirun else None,
            sweep_dir=hc.sweep.dir if is_multirun else None,
        )
        if is_multirun:
            drop_hydra_job_dir(run_dir)
        write_manifest(run_dir, cfg)
        return run_dir

    return run_training_job(cfg, create)


def run_training_job(cfg: Any, create: Callable[[], Path]) -> Optional[float]:
    """One training run in the run directory `create` makes (or reopens, for a resume) on the
    main process and every process shares; prints its summary."""
    from omegaconf import OmegaConf

    from rlrecipes.training.job import TrainingInterrupted
    from rlrecipes.training.job import train as run_training

    plan = PLANS.pop(OmegaConf.to_yaml(cfg, resolve=True), None)

    main = is_main_process()  # every rank of a multi-process launch runs this job; rank 0 owns the files
    try:
        run_dir = shared_run_dir(create, cpu=bool(cfg.trainer.use_cpu))
    except UserError as exc:
        fail(str(exc))

    def body() -> dict:
        if main:
            console.rule(f"[bold]{cfg.recipe.name}[/] on {data_label(cfg.data)} -> {run_dir}")
        try:
            return run_training(cfg, run_dir, log=console.log, plan=plan)
        except TrainingInterrupted as exc:  # SIGINT/SIGTERM: a checkpoint was saved, keep the run
            if main:
                console.print(f"[bold yellow]interrupted:[/] {exc}", highlight=False, soft_wrap=True)
            raise SystemExit(128 + exc.signal) from None

    def discard() -> None:  # a crash (or Ctrl-C) before the first step leaves nothing to keep
        if main and not cfg.resume:
            discard_unstarted_run(run_dir)

    summary = run_job(body, discard)
    if main:
        print_summary(summary, run_dir)
    return summary.get("accuracy_after")


def print_summary(summary: dict, run_dir: Any) -> None:
    table = Table(title=f"run {run_dir}")
    table.add_column("held-out accuracy (greedy)")
    table.add_column("value", justify="right")
    for key in ("accuracy_before", "accuracy_after"):
        if key in summary:
            table.add_row(key.replace("_", " "), "n/a" if summary[key] is None else f"{summary[key]:.3f}")
    if summary.get("accuracy_before") is not None and summary.get("accuracy_after") is not None:
        gain = 100 * (summary["accuracy_after"] - summary["accuracy_before"])
        table.add_row("gain (points)", f"{gain:+.1f}")
    for name, result in summary.get("final_eval", {}).items():  # final_eval=[...]: RUN/eval/
        value = "n/a" if result["value"] is None else f"{result['value']:.3f}"
        table.add_row(f"final eval: {name} {result['metric']}", value)
    table.add_row("wall seconds", f"{summary.get('wall_seconds', 0):.0f}")
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command(context_settings=OVERRIDES, **hydra_help("train"))(train)

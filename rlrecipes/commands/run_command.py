"""What `rlrecipes train` and `rlrecipes sft` share: a Hydra-composed command that runs one job
per run directory. A `RunCommand` says what differs (its config, checks, plan rows, job and
summary); this module does the rest the same way for both:

- `--dry-run`: every job's checks and plan as a table, loading and writing nothing;
- a new run: every job of a sweep checked before the first starts, then Hydra runs each
  in a fresh run directory (`create_run_dir`);
- `resume=true run_dir=R`: the run's saved config with the command line's explicit keys on
  top, run in place, without Hydra's job machinery (one run, in this process);
- every run: the directory made (or reopened) and locked on the main process and shared by all
  (`rundir.lock_run_dir`: one process trains in a run directory at a time), a one-line error for a
  user mistake, nothing left behind by a crash before the first step, 128 + signal after a
  SIGINT/SIGTERM checkpoint.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from rich.table import Table

from rlrecipes import rundir
from rlrecipes.commands.common import console, fail, run_job
from rlrecipes.compose.hydra_app import compose_jobs, run_hydra
from rlrecipes.errors import RunInterrupted, UserError
from rlrecipes.rundir import (
    create_run_dir,
    discard_unstarted_run,
    drop_hydra_job_dir,
    is_main_process,
    release_run_dir,
    shared_run_dir,
    write_manifest,
)

Changes = list  # (key, saved value, new value) of each explicit override of a resume


@dataclass(frozen=True)
class RunCommand:
    name: str  # the subcommand and its config (`conf/<name>.yaml`)
    label: Callable[[Any], str]  # a new run directory's suffix, e.g. `dapo-arithmetic`
    check: Callable[[Any], None]  # every check that needs no machine (a Slurm job may run elsewhere)
    plan_rows: Callable[[Any], list[tuple[str, str]]]  # `--dry-run`'s (what, value) rows
    resumed: Callable[[Any, list[str]], tuple[Any, Changes]]  # the config a resume runs with
    reopen: Callable[[Any, Changes], Path]  # the run directory a resume continues
    run: Callable[[Any, Path], dict]  # the job: its summary
    print_summary: Callable[[dict, Path], None]
    result_key: str  # the summary's value a sweeper optimises


def invoke(command: RunCommand, overrides: list[str], multirun: bool, dry: bool) -> None:
    """The command line `rlrecipes <command.name> [-m] [--dry-run] key=value ...`."""
    if dry:
        print_plans(command, overrides, multirun)
        return
    resumed = resumed_job(command, overrides, multirun)
    if resumed is not None:
        cfg, changes = resumed
        command.check(cfg)
        rundir.invocation = list(sys.argv)
        run_in_run_dir(command, cfg, lambda: command.reopen(cfg, changes))
        return
    # every job of a sweep is checked before the first starts; the machine (CUDA, vLLM) by the
    # job itself, which may run elsewhere (a Slurm launcher)
    run_hydra(command.name, hydra_task(command), overrides, multirun, check=command.check)


def resumed_job(command: RunCommand, overrides: list[str], multirun: bool) -> tuple[Any, Changes] | None:
    """For `resume=true run_dir=R`: the run's saved config with the command line's explicit keys
    on top, and those changes; None for a new run."""
    try:
        jobs = compose_jobs(command.name, overrides, multirun)
        if not any(cfg.resume for _, cfg in jobs):
            return None
        if multirun:
            raise UserError("resume=true continues one run: leave out -m and resume each run with its own run_dir")
        return command.resumed(jobs[0][1], overrides)
    except UserError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits


def print_plans(command: RunCommand, overrides: list[str], multirun: bool) -> None:
    """`--dry-run`: each job's plan as a table (a resume's: the run as it will continue)."""
    jobs = compose_jobs(command.name, overrides, multirun)
    resumed = resumed_job(command, overrides, multirun)
    if resumed is not None:
        jobs = [(overrides, resumed[0])]
    for job, cfg in jobs:
        table = Table(title=f"rlrecipes {command.name} --dry-run {' '.join(job)}".rstrip(), show_header=False)
        table.add_column(style="bold")
        table.add_column(overflow="fold")
        for what, value in command.plan_rows(cfg):
            table.add_row(what, value)
        console.print(table)
    console.print(f"checked {len(jobs)} run(s): nothing was loaded or written", highlight=False)


def hydra_task(command: RunCommand) -> Callable[[Any], Optional[float]]:
    """The Hydra task: one new run in a fresh run directory; returns the summary's
    `result_key` (for sweepers)."""

    def task(cfg: Any) -> Optional[float]:
        hc = HydraConfig.get()
        is_multirun = hc.mode == RunMode.MULTIRUN

        def create() -> Path:
            run_dir = create_run_dir(
                cfg.run_dir,
                cfg.output_root,
                command.label(cfg),
                job_num=hc.job.num if is_multirun else None,
                sweep_dir=hc.sweep.dir if is_multirun else None,
                command=command.name,
            )
            if is_multirun:
                drop_hydra_job_dir(run_dir)
            write_manifest(run_dir, cfg)
            return run_dir

        return run_in_run_dir(command, cfg, create)

    return task


def run_in_run_dir(command: RunCommand, cfg: Any, create: Callable[[], Path]) -> Optional[float]:
    """One run in the directory `create` makes (or reopens, for a resume) on the main process
    and every process shares; prints its summary."""
    main = is_main_process()  # every rank of a multi-process launch runs this job; rank 0 owns the files
    try:
        run_dir = shared_run_dir(create, cpu=bool(cfg.trainer.use_cpu))
    except UserError as exc:
        fail(str(exc))

    def body() -> dict:
        if main:
            console.rule(f"[bold]{command.label(cfg)}[/] -> {run_dir}")
        try:
            return command.run(cfg, run_dir)
        except RunInterrupted as exc:  # SIGINT/SIGTERM: a checkpoint was saved, keep the run
            if main:
                console.print(f"[bold yellow]interrupted:[/] {exc}", highlight=False, soft_wrap=True)
            raise SystemExit(128 + exc.signal) from None

    def discard() -> None:  # a crash (or Ctrl-C) before the first step leaves nothing to keep
        if main and not cfg.resume:
            discard_unstarted_run(run_dir)

    try:
        summary = run_job(body, discard)
    finally:  # the job is over: a sweep run in this process must not keep it locked
        release_run_dir(run_dir)
    if main:
        command.print_summary(summary, run_dir)
    return summary.get(command.result_key)

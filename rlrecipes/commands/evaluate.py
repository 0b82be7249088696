"""`rlrecipes eval`: the Hydra job around `rlrecipes.eval.runner.run_eval`.

``benchmark=a,b`` without ``-m`` means "these benchmarks in one run"; with ``-m`` it stays
a Hydra sweep, one run per benchmark (`rlrecipes.eval.overrides`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from rich.panel import Panel
from rich.table import Table

from rlrecipes.commands.common import OVERRIDES, console, run_job
from rlrecipes.commands.help import hydra_help
from rlrecipes.compose.hydra_app import run_hydra
from rlrecipes.eval.overrides import rewrite_benchmark_list
from rlrecipes.eval.report import print_eval_summary, write_report
from rlrecipes.eval.rundir import discard_if_empty, log_resume, open_run_dir
from rlrecipes.eval.runner import check_eval, prepare, run_eval
from rlrecipes.rundir import MARKER, drop_hydra_job_dir, write_manifest


def eval_(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
) -> None:
    """Generate and grade on benchmarks (benchmark=, protocol=, model.name_or_path=); generations=FILE re-scores."""
    # every job of a sweep is checked before the first starts (inputs are loaded by each job)
    run_hydra("eval", eval_job, rewrite_benchmark_list(list(ctx.args), multirun), multirun, check=check_eval)


def eval_job(cfg: Any) -> float | None:
    """The Hydra task: one eval run; returns the headline average (for sweepers)."""
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    opened: dict[str, Path] = {}  # the run directory, once this job created (not reopened) it

    def body() -> dict:
        prepared = prepare(cfg)  # inputs first: a mistake must not leave a run directory
        run_dir = open_run_dir(cfg, hc.job.num if multirun else None, hc.sweep.dir if multirun else None)
        if multirun:
            drop_hydra_job_dir(run_dir)
        if (run_dir / MARKER).exists():
            log_resume(run_dir)
        else:
            opened["fresh"] = run_dir
            write_manifest(run_dir, cfg)
        console.rule(f"[bold]eval[/] {', '.join(cfg.benchmark.names)} -> {run_dir}")
        summary = run_eval(cfg, run_dir, log=console.log, prepared=prepared, show_plan=print_plan)
        write_report(run_dir, summary)
        print_eval_summary(summary, run_dir, console)
        return summary

    def discard() -> Optional[Path]:  # a crash before the first sample leaves nothing to keep
        if "fresh" in opened:
            discard_if_empty(opened["fresh"])

    summary = run_job(body, discard)
    return summary["average"]["headline"]


def print_plan(rows: list[tuple[str, str]]) -> None:
    """The eval plan as one block: a titled two-column grid whose values wrap in their column."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for what, value in rows:
        table.add_row(what, value)
    console.print(Panel(table, title="eval plan", title_align="left", border_style="dim"))


def register(app: typer.Typer) -> None:
    app.command("eval", context_settings=OVERRIDES, **hydra_help("eval"))(eval_)

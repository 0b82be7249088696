"""The `rlrecipes` command line (Typer front door; Hydra composes the configs)."""

from __future__ import annotations

import sys
from typing import Any, List, Optional

import typer
from rich.console import Console
from rich.table import Table

from rlrecipes.errors import UserError

console = Console()
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine.",
)
config_app = typer.Typer(no_args_is_help=True, help="Inspect configurations.")
app.add_typer(config_app, name="config")
_OVERRIDES = {"allow_extra_args": True, "ignore_unknown_options": True}


@app.command()
def recipes() -> None:
    """Table of the registered recipes: name, paper, idea, status."""
    from rlrecipes.recipes import load_all

    table = Table(title="rlrecipes recipes")
    for col in ("name", "paper", "idea", "status"):
        table.add_column(col, overflow="fold")
    for name, cls in sorted(load_all().items()):
        table.add_row(name, cls.paper, cls.idea, cls.status)
    console.print(table)


@app.command(context_settings=_OVERRIDES)
def train(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
) -> None:
    """Train with RL (no arguments: the CPU quick-start). Takes Hydra overrides key=value."""
    from rlrecipes.config.hydra_app import run_hydra

    run_hydra("train", _train_job, list(ctx.args), multirun)


def _train_job(cfg: Any) -> Optional[float]:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rlrecipes.data.problems import data_label
    from rlrecipes.rundir import (
        create_run_dir,
        discard_unstarted_run,
        drop_hydra_job_dir,
        is_main_process,
        shared_run_dir,
        write_manifest,
    )
    from rlrecipes.train import TrainingInterrupted
    from rlrecipes.train import train as run_training

    hc = HydraConfig.get()
    is_multirun = hc.mode == RunMode.MULTIRUN
    main = is_main_process()  # every rank of a multi-process launch runs this job; rank 0 owns the files

    def create():
        if cfg.resume:  # the same run directory, continued from its last complete checkpoint
            from rlrecipes.train import reopen_run_dir

            return reopen_run_dir(cfg)
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

    # Hydra would print its own multi-line report for any exception a job raises;
    # user mistakes leave here as one line and exit status 2 instead.
    try:
        run_dir = shared_run_dir(create, cpu=bool(cfg.trainer.use_cpu))
    except UserError as exc:
        _fail(str(exc))
    try:
        if main:
            console.rule(f"[bold]{cfg.recipe.name}[/] on {data_label(cfg.data)} -> {run_dir}")
        summary = run_training(cfg, run_dir, log=console.log)
    except TrainingInterrupted as exc:  # SIGINT/SIGTERM: a checkpoint was saved
        if main:
            console.print(f"[bold yellow]interrupted:[/] {exc}", highlight=False, soft_wrap=True)
        raise SystemExit(128 + exc.signal) from None
    except BaseException as exc:  # a crash (or Ctrl-C) before the first step leaves nothing to keep
        if main and not cfg.resume:
            discard_unstarted_run(run_dir)
        if isinstance(exc, UserError):
            _fail(str(exc))
        raise
    if main:
        _print_summary(summary, run_dir)
    return summary.get("accuracy_after")


def _print_summary(summary: dict, run_dir: Any) -> None:
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


@app.command("eval", context_settings=_OVERRIDES)
def eval_(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
) -> None:
    """Generate and grade on benchmarks (benchmark=, protocol=, model.name_or_path=); generations=FILE re-scores."""
    from rlrecipes.eval.command import eval_command

    eval_command(list(ctx.args), multirun)


@app.command()
def report(
    run_dirs: List[str] = typer.Argument(..., help="Run directories, folders holding runs (a sweep) or globs."),
    group_by: Optional[str] = typer.Option(
        None,
        "--group-by",
        help="Columns whose runs fold into mean ± std "
        "(e.g. recipe,trainer.learning_rate); auto = every parameter but seed.",
    ),
    sort: Optional[str] = typer.Option(None, "--sort", help="Column to sort by."),
    desc: bool = typer.Option(False, "--desc", help="Sort descending."),
    where: List[str] = typer.Option(
        [], "--where", help="Keep rows where KEY=VALUE (also !=, >, <, >=, <=); repeatable."
    ),
    out: Optional[str] = typer.Option(None, "--out", help="Folder for report.csv, report.json and report.md."),
    csv: Optional[str] = typer.Option(None, "--csv", help="CSV file to write (raw fractions)."),
    json_file: Optional[str] = typer.Option(None, "--json", help="JSON file to write."),
    md: Optional[str] = typer.Option(None, "--md", help="Markdown file to write (a table for a paper)."),
) -> None:
    """Compare runs: one row each (state, recipe, model, data, seed, the parameters that differ,
    final and best metrics)."""
    from pathlib import Path

    from rlrecipes.eval.report import make_report, rich_table, write_exports

    groups = [k.strip() for k in group_by.split(",") if k.strip()] if group_by else []
    table = make_report(run_dirs, groups, sort, desc, where)
    console.print(rich_table(table))
    for path in write_exports(table, Path(out) if out else None, {"csv": csv, "json": json_file, "md": md}):
        console.print(f"wrote {path}", highlight=False)


@app.command("launch-config")
def launch_config(name: Optional[str] = typer.Argument(None, help="ddp, zero2, zero3, fsdp or multinode.")) -> None:
    """Path of a shipped accelerate config: accelerate launch --config_file $(rlrecipes launch-config zero3) -m rlrecipes.cli train ..."""
    from rlrecipes.launch import config_names, config_path

    if name is None:
        for known in config_names():
            typer.echo(f"{known}\t{config_path(known)}")
        return
    typer.echo(str(config_path(name)))


# One-shot RLVR's tools; their options are declared next to their code (no torch imports).
from rlrecipes.eval.checkpoints import eval_checkpoints_command  # noqa: E402
from rlrecipes.plots import plot_command  # noqa: E402
from rlrecipes.selection import select_command  # noqa: E402

app.command("select")(select_command)
app.command("plot")(plot_command)
app.command("eval-checkpoints", context_settings=_OVERRIDES)(eval_checkpoints_command)


@config_app.command("show", context_settings=_OVERRIDES)
def config_show(
    ctx: typer.Context, name: str = typer.Option("train", "--name", help="Root config: train or eval.")
) -> None:
    """Print the fully resolved config for the given overrides."""
    from omegaconf import OmegaConf

    from rlrecipes.config.compose import compose_config

    overrides = list(ctx.args)
    if name == "eval":  # as `rlrecipes eval` reads it: benchmark=a,b is one run on both
        from rlrecipes.eval.command import rewrite_benchmark_list

        overrides = rewrite_benchmark_list(overrides, multirun=False)
    cfg = compose_config(name, overrides)
    typer.echo(OmegaConf.to_yaml(cfg, resolve=True), nl=False)


def _fail(message: str) -> None:
    from rich.markup import escape

    from rlrecipes.rundir import is_main_process

    if is_main_process():  # every rank of a multi-process launch meets the same mistake: say it once
        console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise SystemExit(2)


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point: user errors become one line and exit status 2."""
    try:
        app(args=argv if argv is not None else sys.argv[1:], standalone_mode=True)
    except UserError as exc:
        _fail(str(exc))


if __name__ == "__main__":
    # through the imported module, so joblib workers pickle the job functions by reference
    # (defined in __main__ they would be shipped by value, with this module's Console and its lock)
    from rlrecipes.cli import main as _main

    _main()

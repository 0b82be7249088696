"""`rlrecipes stages`: a pipeline's stages (`rlrecipes.training.stages`) as one command."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

import typer
from omegaconf import OmegaConf
from rich.panel import Panel
from rich.table import Table

from rlrecipes import rundir
from rlrecipes.commands.common import OVERRIDES, console, fail
from rlrecipes.commands.help import help_with, options_panel
from rlrecipes.commands.sft import check_config as check_sft_config
from rlrecipes.commands.train import check_config as check_train_config
from rlrecipes.compose.compose import conf_dir, group_options
from rlrecipes.compose.settings import command_groups
from rlrecipes.display import print_titled
from rlrecipes.errors import ConfigError, RunInterrupted, UserError
from rlrecipes.rundir import check_not_in_use, create_run_dir, lock_run_dir, write_manifest
from rlrecipes.training.stages import (
    Stage,
    compose_pipeline,
    plan,
    run_stage,
    saved_pipeline,
    stage_config,
    stage_summary,
    state,
    write_summary,
)


def stages(
    ctx: typer.Context,
    dry: bool = typer.Option(
        False, "--dry-run", help="Check every stage and print the plan; load nothing, write nothing."
    ),
) -> None:
    """Run a pipeline's stages (SFT, then RL, ...) in order under one run directory; resume=true continues it. Takes Hydra overrides key=value (STAGE.key=value: one stage)."""
    overrides = list(ctx.args)
    try:
        cfg = pipeline_config(overrides)
        steps = plan(cfg)
        parent = Path(cfg.run_dir).expanduser() if cfg.run_dir else None
        check_stages(steps, parent or Path(cfg.output_root) / f"stages-{cfg.pipeline.name}", cfg.resume)
    except UserError as exc:
        fail(str(exc))
        raise  # unreachable: fail exits
    if dry:
        print_plan(cfg, steps, parent)
        return
    rundir.invocation = list(sys.argv)
    try:
        if cfg.resume:
            parent = reopen(Path(str(cfg.run_dir)).expanduser(), steps)
        else:
            parent = create_run_dir(cfg.run_dir, cfg.output_root, f"stages-{cfg.pipeline.name}", command="stages")
            write_manifest(parent, cfg)
    except UserError as exc:
        fail(str(exc))
        raise
    run_all(cfg, steps, parent)


def pipeline_config(overrides: list[str]) -> Any:
    """The composed pipeline, or for `resume=true run_dir=PARENT` the one it was started with."""
    cfg = compose_pipeline(overrides)
    if not cfg.resume:
        return cfg
    if not cfg.run_dir:
        raise ConfigError("resume=true needs run_dir=PARENT (the pipeline's run directory)")
    extra = [ov for ov in overrides if ov.split("=", 1)[0] not in ("resume", "run_dir")]
    if extra:
        raise ConfigError(f"{extra[0]}: resume=true continues a pipeline as it was started; leave the setting out")
    saved = saved_pipeline(Path(str(cfg.run_dir)).expanduser())
    saved.resume, saved.run_dir = True, cfg.run_dir
    return saved


def check_stages(steps: list[Stage], parent: Path, resuming: bool) -> None:
    """Each stage that will start is checked by its command's own checks, before the first runs."""
    for stage in steps:
        if resuming and state(stage, parent) == "finished":
            stage_summary(stage.run_dir(parent))  # read by later stages and the pipeline's summary
        if resuming and state(stage, parent) != "new":
            continue  # finished: kept; started: resumes with its own saved config
        checks = check_sft_config if stage.command == "sft" else check_train_config
        try:
            checks(stage_config(stage, parent, steps, for_check=True))
        except UserError as exc:
            message = str(exc)
            raise ConfigError(message if message.startswith("stage ") else f"stage {stage.name}: {message}") from None


def reopen(parent: Path, steps: list[Stage]) -> Path:
    """The pipeline's directory, locked for this process, once no process runs in it or in
    one of its stages (a stage whose stages command was killed may still be saving)."""
    lock_run_dir(parent)
    if (parent / "summary.json").is_file():
        raise UserError(f"run_dir={parent} finished already (it has summary.json); nothing to resume")
    for stage in steps:
        try:
            check_not_in_use(stage.run_dir(parent))
        except UserError as exc:
            raise UserError(f"stage {stage.index} ({stage.name}): {exc}") from None
    rundir.append_line(parent / "resumes.log", f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {shlex.join(sys.argv)}")
    return parent


def run_all(cfg: Any, steps: list[Stage], parent: Path) -> None:
    console.rule(f"[bold]{cfg.pipeline.name}[/]: {len(steps)} stages -> {parent}")
    for stage in steps:
        if state(stage, parent) == "finished":
            console.log(f"stage {stage.index} ({stage.name}) finished already: kept ({stage.run_dir(parent)})")
            continue
        try:
            code = run_stage(stage, parent, steps, list(cfg.launcher), console.log)
        except UserError as exc:  # a phase's data could not be prepared: nothing of this stage ran
            fail(f"{exc}; finished stages are kept; continue with: rlrecipes stages resume=true run_dir={parent}")
            raise
        except RunInterrupted as exc:  # SIGTERM/SIGINT/SIGHUP: the stage was ended and waited for
            console.print(f"[bold yellow]interrupted:[/] {exc}", highlight=False, soft_wrap=True)
            raise SystemExit(128 + exc.signal) from None
        if code != 0 or state(stage, parent) != "finished":
            console.print(
                f"[bold red]error:[/] stage {stage.index} ({stage.name}) stopped with exit status {code} (its output "
                f"is above); finished stages are kept; continue with: rlrecipes stages resume=true run_dir={parent}",
                highlight=False,
                soft_wrap=True,
            )
            raise SystemExit(code or 1)
    summary = write_summary(parent, cfg, steps)
    table = Table()
    for column in ("stage", "steps", "held-out before", "held-out after"):
        table.add_column(column)
    for row in summary["stages"]:
        name = "accuracy" if row.get("accuracy_after") is not None else "loss"
        values = [row.get(f"{name}_{when}") for when in ("before", "after")]
        table.add_row(
            f"{row['stage']} ({row['command']})",
            str(row.get("steps")),
            *[f"{name} {v:.3f}" if v is not None else "n/a" for v in values],
        )
    print_titled(console, table, f"pipeline {cfg.pipeline.name}:", parent)


def print_plan(cfg: Any, steps: list[Stage], parent: Path | None) -> None:
    where = parent or Path(cfg.output_root) / f"<time>-stages-{cfg.pipeline.name}"
    table = Table(title=f"rlrecipes stages --dry-run: pipeline {cfg.pipeline.name}", show_header=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for stage in steps:
        status = f" [{state(stage, where)}]" if cfg.resume else ""
        argv = once(stage.argv(where, steps))
        table.add_row(f"{stage.index} {stage.name}{status}", f"rlrecipes {stage.command} {' '.join(argv)}")
    console.print(table)
    console.print(f"checked {len(steps)} stage(s): nothing was loaded or written", highlight=False)


def once(argv: list[str]) -> list[str]:
    """A stage's command line with each key once: its last value, the one the stage runs with (a
    preset's `trainer.max_steps=60`, then the command line's `STAGE.trainer.max_steps=5`: the 5)."""
    key = [a.lstrip("+~").split("=", 1)[0] if "=" in a else None for a in argv]
    return [a for i, a in enumerate(argv) if key[i] is None or key[i] not in key[i + 1 :]]


def pipelines_panel() -> list[Panel]:
    """`--help`: every pipeline of conf/pipeline/ with its one-line description."""
    default = next((g.default for g in command_groups("stages") if g.name == "pipeline"), None)
    rows = []
    for name in group_options("pipeline"):
        about = OmegaConf.load(conf_dir() / "pipeline" / f"{name}.yaml").get("description") or ""
        rows.append((f"{name}*" if name == default else name, str(about)))
    return [options_panel(rows, "Pipelines (pipeline=NAME; * = default)")]


def register(app: typer.Typer) -> None:
    app.command(
        context_settings=OVERRIDES,
        **help_with(
            "rlrecipes stages pipeline=toy_sft_grpo            # SFT, then GRPO from its model",
            "rlrecipes stages pipeline=toy_length_curriculum   # QwenLong-L1's phases on the toy",
            "rlrecipes stages pipeline=toy_sft_grpo rl.trainer.max_steps=40   # STAGE.key for one stage",
            "rlrecipes stages resume=true run_dir=PARENT       # keeps finished stages",
            panels=pipelines_panel,
        ),
    )(stages)

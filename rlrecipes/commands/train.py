"""`rlrecipes train`: the training job (`rlrecipes.training`) as a Hydra-composed command
(`run_command.RunCommand`: dry runs, sweeps, resume and run directories as `sft` has them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from omegaconf import OmegaConf
from rich.table import Table

from rlrecipes.commands.common import OVERRIDES, console
from rlrecipes.commands.help import hydra_help
from rlrecipes.commands.run_command import RunCommand, invoke
from rlrecipes.data.problems import data_label
from rlrecipes.display import print_titled
from rlrecipes.recipes import get_recipe


def train(
    ctx: typer.Context,
    multirun: bool = typer.Option(False, "--multirun", "-m", help="Hydra multirun: sweep comma lists."),
    dry: bool = typer.Option(
        False, "--dry-run", help="Run every check and print the run's plan; load nothing, write nothing."
    ),
    no_preflight: bool = typer.Option(
        False,
        "--no-preflight",
        help="Skip the pre-flight verdict on the first rollout (trainer.preflight=false).",
    ),
) -> None:
    """Train with RL (no arguments: the CPU quick-start). Takes Hydra overrides key=value."""
    invoke(TRAIN, [*ctx.args, *(["trainer.preflight=false"] if no_preflight else [])], multirun, dry)


# The training job is imported only once Hydra has composed the config: it imports TRL, and
# TRL imports the optional vLLM when installed, which logs on import, so a mistyped key
# would no longer be the one line of its report.
def check_config(cfg: Any) -> None:
    """`rlrecipes.training.plan.plan_run` without the machine checks (a Slurm job may run
    elsewhere); the plan is kept for a job that runs in this process."""
    from rlrecipes.training.plan import plan_run

    PLANS[OmegaConf.to_yaml(cfg, resolve=True)] = plan_run(cfg, hardware=False)


# the plans the sweep check made, by config: an in-process job takes its own instead of
# planning again (`RunPlan.at` names it after the run directory the job gets)
PLANS: dict[str, Any] = {}


def _plan_rows(cfg: Any) -> list[tuple[str, str]]:
    from rlrecipes.training.plan import dry_run, reward_context

    rows = dry_run(cfg)
    # what the recipe's engine hooks do (an advantage estimator, a policy loss), as each says it
    hooks = get_recipe(cfg.recipe.name)(cfg.recipe).hooks(reward_context(cfg, _no_verifier))
    return rows + [("engine", text) for text in (hook.describe() for hook in hooks) if text]


def _no_verifier(completion: str, gold: Any) -> bool:
    raise RuntimeError("a dry run builds the recipe's hooks to describe them; they score nothing")


def _resumed(cfg: Any, overrides: list[str]) -> tuple[Any, list]:
    from rlrecipes.training.resume import resumed_config

    return resumed_config(cfg, overrides)


def _reopen(cfg: Any, changes: list) -> Path:
    from rlrecipes.training.resume import reopen_run_dir

    return reopen_run_dir(cfg, changes, log=console.log)


def _run(cfg: Any, run_dir: Path) -> dict:
    from rlrecipes.training.job import train as run_training

    plan = PLANS.pop(OmegaConf.to_yaml(cfg, resolve=True), None)
    return run_training(cfg, run_dir, log=console.log, plan=plan)


def print_summary(summary: dict, run_dir: Any) -> None:
    table = Table()
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
    print_titled(console, table, "run", run_dir)


TRAIN = RunCommand(
    name="train",
    label=lambda cfg: f"{cfg.recipe.name}-{data_label(cfg.data)}",
    check=check_config,
    plan_rows=_plan_rows,
    resumed=_resumed,
    reopen=_reopen,
    run=_run,
    print_summary=print_summary,
    result_key="accuracy_after",
)


def register(app: typer.Typer) -> None:
    app.command(context_settings=OVERRIDES, **hydra_help("train"))(train)

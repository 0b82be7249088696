"""The `rlrecipes` command line: the Typer app assembled from `rlrecipes.commands`.

Each command is a module with `register(app)`; it is imported only when its command runs
(or when `rlrecipes --help` lists them all), so `rlrecipes report` does not pay for the
torch, transformers and vLLM imports that `train` and `eval` need.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, List, Optional

import click
import typer
from typer.core import TyperCommand, TyperGroup

from rlrecipes.commands.common import console, fail
from rlrecipes.errors import UserError
from rlrecipes.quiet import quiet
from rlrecipes.rundir import is_main_process

# command name -> (module of rlrecipes.commands, one-line help), in the order `rlrecipes --help`
# lists them. The help is written here so that `rlrecipes --help` imports no command module
# (several import torch and transformers: seconds); tests/test_cli.py checks it matches each
# command's own docstring.
COMMANDS = {
    "recipes": ("recipes", "Table of the registered recipes: name, paper, idea, status."),
    "train": ("train", "Train with RL (no arguments: the CPU quick-start)."),
    "sft": ("sft", "Supervised fine-tuning (TRL SFTTrainer); RUN/model feeds train and eval as model.name_or_path."),
    "stages": ("stages", "Run a pipeline's stages (SFT, then RL, ...) in order under one run directory; resume=true continues it."),
    "eval": ("evaluate", "Generate and grade on benchmarks (benchmark=, protocol=, model.name_or_path=); generations=FILE re-scores."),
    "report": ("report", "Compare runs: one row each (state, recipe, model, data, seed, the parameters that differ, final and best metrics)."),
    "plot": ("plot", "Plot runs: several runs' metrics on one figure (PNG + SVG); one run alone: training vs held-out accuracy (SVG)."),
    "doctor": ("doctor", "Check training runs for silent failures: healthy, or each finding with its evidence and fix."),
    "show": ("show", "Print a step's stored samples: prompts, completions, rewards, advantages, tool turns."),
    "select": ("select", "Rank examples by the variance of their accuracy history and write the top K."),
    "eval-checkpoints": ("eval_checkpoints", "Evaluate a run's checkpoints on a suite; report the best-average and the last one."),
    "spurious-labels": ("spurious_labels", "Sample the base model on the training data and write Spurious Rewards' labels file (for reward=majority|incorrect)."),
    "judge-pairs": ("judge", "Sample a model, grade the samples, keep one correct + one incorrect per problem: a pair file."),
    "judge-eval": ("judge", "Judge preference pairs in both orders: accuracy, position-consistent accuracy, flips, ties."),
    "save-benchmark": ("save_benchmark", "Save benchmarks from the hub to DIR as JSONL; on a machine without network, eval reads them with data_dir=DIR."),
    "launch-config": ("launch", "Path of a shipped accelerate config: accelerate launch --config_file $(rlrecipes launch-config zero3) -m rlrecipes.cli train ..."),
    "config": ("config", "Inspect configurations."),
    "sandbox": ("sandbox", "The python tool's sandbox (bubblewrap)."),
}  # fmt: skip


class LazyCommands(TyperGroup):
    """A command group whose commands are built from their module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"rlrecipes.commands.{COMMANDS[name][0]}")
        commands = typer.Typer()
        module.register(commands)
        group = typer.main.get_group(commands)
        return group.get_command(ctx, name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """`rlrecipes --help` lists each command from `COMMANDS`: building the real command would
        import its module."""
        real, self.get_command = self.get_command, self._listed_command
        try:
            super().format_help(ctx, formatter)
        finally:
            self.get_command = real

    def _listed_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        return TyperCommand(name=name, help=COMMANDS[name][1]) if name in COMMANDS else None


app = typer.Typer(
    cls=LazyCommands,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine.",
)


@app.callback()
def _root() -> None:
    """Reproduce the 2025 RL recipes for LLM reasoning on one TRL engine."""


def main(argv: Optional[List[str]] = None) -> Any:
    """Console-script entry point: user errors become one line and exit status 2."""
    quiet()  # before any dependency is imported: their notes are filtered once, here
    try:
        app(args=argv if argv is not None else sys.argv[1:], standalone_mode=True)
    except UserError as exc:
        fail(str(exc))
    except KeyboardInterrupt:  # outside RL's own handler (which saves a checkpoint): model builds, evals
        if is_main_process():
            console.print(
                "[bold yellow]interrupted[/] (Ctrl-C): finished work is kept; an eval continues with "
                "resume=true run_dir=RUN, a toy model build starts again",
                highlight=False,
            )
        raise SystemExit(130) from None


if __name__ == "__main__":
    # through the imported module, so joblib workers pickle the job functions by reference
    # (defined in __main__ they would be shipped by value, with this module's Console and its lock)
    from rlrecipes.cli import main as _main

    _main()

"""`rlrecipes launch-config`: the shipped accelerate configs (multi-GPU, DeepSpeed, FSDP)."""

from __future__ import annotations

from typing import Optional

import typer

from rlrecipes.commands.help import help_with
from rlrecipes.launch import config_names, config_path


def launch_config(name: Optional[str] = typer.Argument(None, help="ddp, zero2, zero3, fsdp or multinode.")) -> None:
    """Path of a shipped accelerate config: accelerate launch --config_file $(rlrecipes launch-config zero3) -m rlrecipes.cli train ..."""
    if name is None:
        for known in config_names():
            typer.echo(f"{known}\t{config_path(known)}")
        return
    typer.echo(str(config_path(name)))


def register(app: typer.Typer) -> None:
    app.command(
        "launch-config",
        **help_with(
            "rlrecipes launch-config                # every name and its path",
            "accelerate launch --config_file $(rlrecipes launch-config zero3) \\",
            "    -m rlrecipes.cli train trainer=gpu",
        ),
    )(launch_config)

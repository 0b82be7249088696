"""`rlrecipes config ...`: inspect the composed configurations."""

from __future__ import annotations

import typer
from omegaconf import OmegaConf

from rlrecipes.commands.common import OVERRIDES
from rlrecipes.commands.help import help_with
from rlrecipes.compose.compose import compose_config
from rlrecipes.eval.overrides import rewrite_benchmark_list

config_app = typer.Typer(
    no_args_is_help=True,
    help="Inspect configurations.",
    epilog="Examples: rlrecipes config show recipe=dapo | rlrecipes config show --name eval benchmark=math500",
)


@config_app.command(
    "show",
    context_settings=OVERRIDES,
    **help_with(
        "rlrecipes config show recipe=dapo trainer=gpu",
        "rlrecipes config show --name eval benchmark=math500 protocol=avg8_t06",
    ),
)
def config_show(
    ctx: typer.Context, name: str = typer.Option("train", "--name", help="Root config: train or eval.")
) -> None:
    """Print the fully resolved config for the given overrides."""
    overrides = list(ctx.args)
    if name == "eval":  # as `rlrecipes eval` reads it: benchmark=a,b is one run on both
        overrides = rewrite_benchmark_list(overrides, multirun=False)
    cfg = compose_config(name, overrides)
    typer.echo(OmegaConf.to_yaml(cfg, resolve=True), nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")

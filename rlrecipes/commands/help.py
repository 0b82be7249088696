"""`--help` beyond Typer's options: examples for every command, and for the Hydra commands
(`train`, `eval`) their config groups and most used keys, generated from the schema
(`rlrecipes.compose.settings`) so they list what the code accepts today."""

from __future__ import annotations

from typing import Any, Callable

import click
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand

from rlrecipes.compose.settings import command_groups, command_settings

# The keys a user reaches for first, per command; defaults, valid values and descriptions
# come from the schema. A key renamed there fails tests/config/test_settings_help.py.
MOST_USED = {
    "train": (
        "model.name_or_path",
        "data.path",
        "data.template",
        "trainer.max_steps",
        "trainer.learning_rate",
        "trainer.prompts_per_rollout",
        "trainer.num_generations",
        "trainer.max_completion_length",
        "trainer.temperature",
        "trainer.checkpoints.every",
        "trainer.eval.every",
        "recipe.beta",
        "recipe.loss_type",
        "model.lora.r",
        "seed",
        "run_dir",
        "resume",
        "final_eval",
        "report_to",
    ),
    "eval": (
        "model.name_or_path",
        "data_dir",
        "limit",
        "protocol.num_samples",
        "protocol.temperature",
        "protocol.max_new_tokens",
        "generation.backend",
        "generation.batch_size",
        "threads",
        "generations",
        "resume",
        "run_dir",
        "seed",
    ),
}

EXAMPLES = {
    "train": (
        "rlrecipes train                          # the CPU quick-start (toy model)",
        "rlrecipes train recipe=dapo trainer.max_steps=60",
        "rlrecipes train -m seed=0,1,2 recipe=grpo,dapo   # a sweep: 6 runs",
        "rlrecipes train --dry-run experiment=dapo_paper  # check and plan only",
    ),
    "eval": (
        "rlrecipes eval limit=50                  # the toy on held-out arithmetic",
        "rlrecipes eval model=smollm2-135m benchmark=math500 data_dir=DIR limit=20",
        "rlrecipes eval benchmark=aime24,amc23 protocol=avg8_t06 model.name_or_path=M",
        "rlrecipes eval generations=FILE.jsonl benchmark=math500  # re-score",
    ),
}

LISTED_OPTIONS = 12  # a group with more options (the paper presets) shows its default, a few, and a count
ALWAYS_LISTED = {"recipe"}  # the methods: a user picks one by name, so every one is shown


def _console() -> Console:
    try:  # Typer's help console: the same width and colours as the panels above
        from typer.rich_utils import _get_rich_console

        return _get_rich_console()
    except ImportError:
        return Console()


def _panel(table: Table, title: str) -> Panel:
    return Panel(table, border_style="dim", title=title, title_align="left")


def settings_panels(config_name: str) -> list[Panel]:
    """The groups and the most used keys of `conf/<config_name>.yaml`, as help panels."""
    groups = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    groups.add_column(style="bold cyan", no_wrap=True)
    groups.add_column(ratio=1)
    for g in command_groups(config_name):
        shown = [f"{o}*" if o == g.default else o for o in g.options]
        if len(shown) > LISTED_OPTIONS and g.name not in ALWAYS_LISTED:
            first = [o for o in g.options if o == g.default] + [o for o in g.options if o != g.default][:3]
            shown = [f"{o}*" if o == g.default else o for o in first] + [f"… {len(g.options)} in conf/{g.name}/"]
        groups.add_row(f"{g.name}=", Text(" ".join(shown)))
    keys = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    keys.add_column(style="bold cyan", no_wrap=True)
    keys.add_column(ratio=1)  # wrapped at its words: a description is read whole, at any width
    for s in command_settings(config_name, MOST_USED[config_name]):
        # the valid values spaced out, so a long list wraps between them, never inside one
        about = s.help + (f" ({' | '.join(s.choices)})" if s.choices else "")
        keys.add_row(f"{s.key}={s.default}", Text(about))
    return [
        _panel(groups, "Config groups (GROUP=OPTION; * = default)"),
        _panel(keys, "Most used keys (KEY=DEFAULT; any key: rlrecipes config show)"),
    ]


def options_panel(rows: list[tuple[str, str]], title: str) -> Panel:
    """(name, one-line description) rows as a help panel: names whole, descriptions wrapped."""
    table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(ratio=1)
    for name, about in rows:
        table.add_row(Text(name), Text(about))
    return _panel(table, title)


def examples_panel(lines: tuple[str, ...]) -> Panel:
    table = Table(show_header=False, box=None, padding=(0, 1), pad_edge=False, expand=True)
    table.add_column(overflow="fold")
    for line in lines:
        table.add_row(Text(line))
    return _panel(table, "Examples")


def help_with(
    *examples: str, config_name: str | None = None, panels: Callable[[], list[Panel]] | None = None
) -> dict[str, Any]:
    """`app.command(**help_with(...))`: a command whose `--help` ends with its examples and, for
    a Hydra command (`config_name`), the config's groups and most used keys before them;
    `panels` makes more panels to show before the examples (built only when --help is asked)."""

    class HelpCommand(TyperCommand):
        def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            super().format_help(ctx, formatter)  # usage, text, options (rich prints them at once)
            console = _console()
            for panel in settings_panels(config_name) if config_name else []:
                console.print(panel)
            for panel in panels() if panels else []:
                console.print(panel)
            console.print(examples_panel(examples))

    extra = {"options_metavar": "[OPTIONS] [KEY=VALUE]..."} if config_name else {}
    return {"cls": HelpCommand, **extra}


def hydra_help(config_name: str) -> dict[str, Any]:
    """`help_with` for `rlrecipes train` / `rlrecipes eval`."""
    return help_with(*EXAMPLES[config_name], config_name=config_name)

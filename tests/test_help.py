"""Every command's `--help` names its settings and shows examples, within 80 columns; the
Hydra commands list their config groups and most used keys (rlrecipes/commands/help.py)."""

import os
import subprocess
import sys

import pytest

from rlrecipes.cli import COMMANDS
from tests.conftest import cli


def help_text(capsys, monkeypatch, *command: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    code, out = cli(capsys, *command, "--help")
    assert code == 0, out
    return out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_has_examples_and_fits_80_columns(command, capsys, monkeypatch):
    out = help_text(capsys, monkeypatch, command)
    assert "Examples" in out and f"rlrecipes {command}" in out
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert not wide, wide


def test_eval_help_lists_the_groups_and_keys_a_new_user_needs(capsys, monkeypatch):
    out = help_text(capsys, monkeypatch, "eval")
    for needle in (
        "benchmark=",
        "math500",  # an option of the benchmark group
        "protocol=",
        "limit=null",
        "data_dir=null",
        "threads=null",
        "protocol.max_new_tokens=null",
        "generation.backend=auto",
        "(auto | hf | vllm)",
        "[KEY=VALUE]",
    ):
        assert needle in " ".join(out.replace("│", " ").split()), needle  # a description wraps at its words


def test_train_help_lists_every_recipe_and_the_trainer_keys(capsys, monkeypatch):
    out = help_text(capsys, monkeypatch, "train")
    for recipe in ("dapo", "grpo*", "intuitor", "j1", "one_shot", "spurious", "ttrl"):
        assert recipe in out, recipe
    for key in ("trainer.max_steps=120", "trainer.max_completion_length=", "recipe.loss_type=grpo", "experiment="):
        assert key in out, key


@pytest.mark.integration
def test_eval_help_in_a_terminal_of_80_columns():
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "eval", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=300,
    )
    assert out.returncode == 0 and "protocol.max_new_tokens" in out.stdout, out.stdout + out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 80


def panel_text(out: str, title: str) -> str:
    """A help panel's rows, joined into one line: wrapped cells read whole."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if title in line)
    end = next(i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("╰"))
    return " ".join(" ".join(line.strip().strip("│").split()) for line in lines[start + 1 : end])


@pytest.mark.parametrize("command", ["train", "eval"])
def test_every_key_description_is_shown_whole_at_80_columns(command, capsys, monkeypatch):
    from rlrecipes.commands.help import MOST_USED
    from rlrecipes.compose.settings import command_settings

    out = help_text(capsys, monkeypatch, command)
    keys = panel_text(out, "Most used keys")
    assert "…" not in keys, keys
    for s in command_settings(command, MOST_USED[command]):
        about = " ".join(s.help.split()) + (f" ({' | '.join(s.choices)})" if s.choices else "")
        assert f"{s.key}={s.default} {about}" in keys, (s.key, about)


def test_stages_help_lists_every_pipeline_with_its_description(capsys, monkeypatch):
    from omegaconf import OmegaConf

    from rlrecipes.compose.compose import conf_dir, group_options

    out = help_text(capsys, monkeypatch, "stages")
    listed = panel_text(out, "Pipelines")
    names = group_options("pipeline")
    assert len(names) >= 10
    for name in names:
        description = OmegaConf.load(conf_dir() / "pipeline" / f"{name}.yaml").description
        assert description and "\n" not in description, name  # every pipeline says what it does, in a line
        assert f"{name}{'*' if name == 'toy_sft_grpo' else ''} {description}" in listed, name

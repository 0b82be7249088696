"""`rlrecipes train --help` / `eval --help` list groups and keys read from the schema and conf/
(rlrecipes/compose/settings.py): what they say must be what composing gives."""

from dataclasses import dataclass

import pytest
from omegaconf import OmegaConf

from rlrecipes.commands.help import MOST_USED
from rlrecipes.compose import compose_config, conf_dir
from rlrecipes.compose.settings import as_typed, command_groups, command_settings, field_comments, first_clause
from rlrecipes.errors import ConfigError


@pytest.mark.parametrize("config_name", ["train", "eval"])
def test_every_listed_key_shows_the_default_a_composition_gives(config_name):
    cfg = compose_config(config_name, [])
    for setting in command_settings(config_name, MOST_USED[config_name]):
        assert setting.default == as_typed(OmegaConf.select(cfg, setting.key)), setting


@pytest.mark.parametrize("config_name", ["train", "eval"])
def test_the_groups_are_the_conf_folders_with_their_yaml_files(config_name):
    groups = {g.name: g for g in command_groups(config_name)}
    expected = {"train": {"recipe", "model", "data", "trainer", "rollout", "reward", "experiment"}}
    expected["eval"] = {"model", "data", "benchmark", "protocol"}
    assert set(groups) == expected[config_name]
    for g in groups.values():
        assert list(g.options) == sorted(p.stem for p in (conf_dir() / g.name).glob("*.yaml"))
    if config_name == "train":
        assert groups["recipe"].default == "grpo" and groups["experiment"].default is None


def test_a_key_the_schema_lacks_is_refused():
    with pytest.raises(ConfigError, match="'trainer.lerning_rate' is not a key of TrainConfig"):
        command_settings("train", ["trainer.lerning_rate"])


def test_a_choice_lists_its_values_and_the_comment_is_its_first_clause():
    (loss,) = command_settings("train", ["recipe.loss_type"])
    assert loss.choices[:3] == ("grpo", "dr_grpo", "dapo") and loss.default == "grpo"
    (beta,) = command_settings("train", ["recipe.beta"])
    assert beta.help == "k3 KL coefficient"  # "# k3 KL coefficient; 0 loads no reference model"


@dataclass
class Documented:
    # Where the numbers come from (a file). More on the second line.
    source: str = "x"
    rate: float = 0.5  # Learning rate; 0 = off
    undocumented: int = 1


def test_field_comments_take_the_trailing_comment_else_the_block_above():
    assert field_comments(Documented) == {
        "source": "where the numbers come from",
        "rate": "learning rate",
        "undocumented": "",
    }
    assert first_clause("KL coefficient (k3); see the paper") == "KL coefficient"

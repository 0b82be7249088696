"""Presets name public datasets: nothing under conf/ points into a development folder."""

from pathlib import Path

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.compose.compose import conf_dir

EXPERIMENTS = sorted(p.stem for p in (Path(conf_dir()) / "experiment").glob("*.yaml"))


def test_no_preset_points_into_the_shared_folder():
    groups = ("data", "experiment", "benchmark", "protocol")
    offenders = [str(p) for g in groups for p in (Path(conf_dir()) / g).glob("*.yaml") if "../shared" in p.read_text()]
    assert not offenders, offenders


@pytest.mark.integration
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_experiment_names_public_data(name):
    cfg = compose_config("train", [f"experiment={name}"])
    for key in ("path", "eval_path"):
        value = str(cfg.data[key] or "")
        assert "shared" not in value, (key, value)  # a hub id, or null for the user to supply

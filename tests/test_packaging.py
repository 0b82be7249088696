"""The configs must ship inside the wheel: a non-editable install composes from any cwd."""

import subprocess
import sys

import pytest

from rlrecipes.compose.compose import conf_dir


@pytest.mark.integration
def test_non_editable_install_finds_its_configs(tmp_path):
    root = conf_dir().parent
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(root)],
        capture_output=True,
        text=True,
    )
    if build.returncode != 0:
        pytest.skip(f"could not build the wheel here: {build.stderr.strip().splitlines()[-1:]}")
    code = (
        "from rlrecipes.compose import compose_config, conf_dir; "
        "cfg = compose_config('train', ['recipe=grpo', 'trainer.max_steps=3']); "
        "from rlrecipes.launch import config_path; "
        "print(conf_dir()); print(cfg.trainer.max_steps); print(config_path('zero3').parent)"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    where, steps, launch_configs = out.stdout.split()
    assert where == str(target / "rlrecipes" / "conf") and steps == "3"
    assert launch_configs == str(target / "rlrecipes" / "launch")  # the accelerate configs ship too

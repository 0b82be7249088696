"""`rlrecipes stages`: a pipeline's stages run in order under one parent, the RL stage starts
from the SFT stage's model, and a resume after the second stage crashed keeps the first
stage untouched and continues the second from its checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlrecipes.errors import ConfigError
from tests.conftest import TINY

SETTINGS = [*TINY, "trainer.cpu_threads=1", "prime.trainer.max_steps=4", "rl.trainer.save_steps=1"]


def stages(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "stages", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "250"},
    )


@pytest.mark.integration
def test_a_pipeline_runs_its_stages_and_resumes_after_the_second_crashed(toy_model_dir, tmp_path):
    from rlrecipes.integrity import content_digest

    parent = tmp_path / "pipeline"
    done = stages(f"run_dir={parent}", *SETTINGS, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    prime, rl = parent / "1-prime", parent / "2-rl"
    rl_config = (rl / "config.yaml").read_text()
    assert f"name_or_path: {prime / 'model'}" in rl_config and "max_steps: 2" in rl_config
    assert "max_steps: 4" in (prime / "config.yaml").read_text()  # prime.trainer.max_steps went to prime only
    summary = json.loads((parent / "summary.json").read_text())
    assert [(s["stage"], s["command"], s["steps"]) for s in summary["stages"]] == [
        ("prime", "sft", 4),
        ("rl", "train", 2),
    ]

    # what a crash of the RL stage after its step-1 checkpoint leaves
    kept = content_digest(prime)
    shutil.rmtree(rl / "checkpoints" / "checkpoint-2")
    shutil.rmtree(rl / "model")
    (rl / "summary.json").unlink()
    (parent / "summary.json").unlink()
    refused = stages("resume=true", f"run_dir={parent}", "seed=3", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout.strip().splitlines()[-1] == (
        "error: seed=3: resume=true continues a pipeline as it was started; leave the setting out"
    )
    resumed = stages("resume=true", f"run_dir={parent}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    out = " ".join(resumed.stdout.split())
    assert "stage 1 (prime) finished already: kept" in out and "rlrecipes train resume=true" in out
    assert "from checkpoint-1" in (rl / "resumes.log").read_text()
    assert content_digest(prime) == kept  # nothing of the finished stage rewritten
    assert json.loads((rl / "summary.json").read_text())["steps"] == 2
    assert len(json.loads((parent / "summary.json").read_text())["stages"]) == 2


def test_stage_overrides_are_routed_and_checked_before_anything_runs():
    from rlrecipes.training.stages import compose_pipeline, plan

    cfg = compose_pipeline(["seed=2", "rl.trainer.max_steps=5", "run_dir=/tmp/x"])
    prime, rl = plan(cfg)
    assert prime.overrides == ("trainer.max_steps=60", "seed=2")
    assert rl.overrides == ("seed=2", "trainer.max_steps=5") and rl.model_from == "prime"
    assert rl.argv(Path("/p"), [prime, rl])[-2:] == ["model.name_or_path=/p/1-prime/model", "run_dir=/p/2-rl"]
    with pytest.raises(ConfigError, match="stage prime: model_from='rl' is not an earlier stage; earlier: none"):
        plan(compose_pipeline(["pipeline.stages.0.model_from=rl"]))
    with pytest.raises(ConfigError, match="stage name 'data' is a key of the sft config"):
        plan(compose_pipeline(["pipeline.stages.0.name=data"]))

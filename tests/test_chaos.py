"""Chaos: a DAPO run with dynamic sampling, killed with SIGKILL at seeded random moments
(mid-rollout, mid-update, mid-checkpoint, mid-log, during a resume) and resumed each time,
ends with the uninterrupted run's metrics and weights — on one process and on two."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.helpers.processes import accelerate_launcher
from tests.test_resume import ENTRY, ROOT, SETTINGS, assert_same_run

pytestmark = pytest.mark.e2e
KILLS = 3  # kills per run; the moments are drawn from a fixed seed, so every machine tries the same ones


def launch(processes: int, *overrides: str, cwd: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    launcher = accelerate_launcher(processes)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("RLRECIPES_TEST_FAULT", None)
    if fault:
        env["RLRECIPES_TEST_FAULT"] = fault
    command = [sys.executable, *launcher, ENTRY, "train", *overrides]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=900)


@pytest.mark.parametrize("processes", [1, 2])
def test_killed_at_random_moments_and_resumed_it_is_the_uninterrupted_run(processes, toy_model_dir, tmp_path):
    reference = tmp_path / "reference"
    out = launch(processes, *TINY, *SETTINGS, f"run_dir={reference}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]

    run = tmp_path / "run"
    moments = random.Random(20 + processes).sample(range(1, 18), KILLS)
    out = launch(processes, *TINY, *SETTINGS, f"run_dir={run}", cwd=tmp_path, fault=f"kill_at_event:{moments[0]}")
    kills = int(out.returncode != 0)
    for moment in [*moments[1:], None]:  # each resume may itself be killed; the last runs to the end
        if (run / "summary.json").is_file():
            break
        fault = f"kill_at_event:{moment}" if moment else None
        out = launch(processes, "resume=true", f"run_dir={run}", cwd=tmp_path, fault=fault)
        assert out.returncode == 0 or moment, out.stdout[-3000:] + out.stderr[-3000:]
        kills += int(out.returncode != 0)
    assert kills >= 2, f"the seeded moments {moments} killed only {kills} time(s)"
    assert_same_run(run, reference)

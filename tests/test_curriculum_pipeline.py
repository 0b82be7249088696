"""QwenLong-L1's phased RL through `rlrecipes stages` on the toy: a warm-up SFT, phase 1 on
short prompts only, phase 2 on all with phase 1's hard examples carried in; a resume after
phase 2 was lost keeps the finished stages and rebuilds phase 2's data identically."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from tests.conftest import TINY
from tests.test_stages import stages

SETTINGS = [
    "pipeline=toy_length_curriculum",
    *TINY,
    "trainer.cpu_threads=1",
    "warmup.trainer.max_steps=4",
]


@pytest.mark.integration
def test_two_phases_run_filtered_and_carried_then_resume_from_the_finished_phase(toy_model_dir, tmp_path):
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.integrity import content_digest
    from tests.conftest import compose

    parent = tmp_path / "curriculum"
    done = stages(f"run_dir={parent}", *SETTINGS, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads((parent / "summary.json").read_text())
    assert [(s["stage"], s["steps"]) for s in summary["stages"]] == [("warmup", 4), ("phase1", 2), ("phase2", 2)]
    assert f"name_or_path: {parent / '2-phase1' / 'model'}" in (parent / "3-phase2" / "config.yaml").read_text()

    # phase 1: "a+b" with two two-digit operands is 7 toy tokens under the chat template, over the limit 6
    train = load_problem_set(compose().data).train
    long = [p for p in train if len(p["problem"]) == 5]
    phase1 = json.loads((parent / "2-phase1-data" / "phase.json").read_text())
    assert (phase1["problems"], phase1["left_out_by_length"]) == (len(train), len(long)) and len(long) > 0
    rows1 = [json.loads(line) for line in (parent / "2-phase1-data" / "train.jsonl").read_text().splitlines()]
    assert len(rows1) == len(train) - len(long) and all(len(r["problem"]) <= 4 for r in rows1)
    assert "left out" in " ".join(done.stdout.split())

    # phase 2: every problem, then phase 1's examples with mean accuracy < 0.5, round(1/mean) times
    history = json.loads((parent / "2-phase1" / "accuracy_history.json").read_text())
    means = {k: sum(v) / len(v) for k, v in history.items() if v}
    expected = {k: min(8, math.floor(1 / max(m, 0.125) + 0.5)) for k, m in means.items() if m < 0.5}
    phase2 = json.loads((parent / "3-phase2-data" / "phase.json").read_text())
    assert phase2["left_out_by_length"] == 0 and phase2["kept"] == len(train)
    assert {c["id"]: c["copies"] for c in phase2["carried"]} == expected
    assert phase2["train_rows"] == len(train) + sum(expected.values())

    # phase 2 lost (its run and its data): the resume rebuilds the data from phase 1's record
    kept = {name: content_digest(parent / name) for name in ("1-warmup", "2-phase1", "2-phase1-data")}
    data = (parent / "3-phase2-data" / "train.jsonl").read_text()
    shutil.rmtree(parent / "3-phase2")
    shutil.rmtree(parent / "3-phase2-data")
    (parent / "summary.json").unlink()
    resumed = stages("resume=true", f"run_dir={parent}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    out = " ".join(resumed.stdout.split())
    assert "stage 2 (phase1) finished already: kept" in out
    assert {name: content_digest(parent / name) for name in kept} == kept
    assert (parent / "3-phase2-data" / "train.jsonl").read_text() == data
    assert json.loads((parent / "3-phase2" / "summary.json").read_text())["steps"] == 2

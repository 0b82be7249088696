"""Experience replay in whole training runs: two processes (gloo), a kill-and-resume, and with
DAPO's dynamic sampling.

Every run trains on the TINY data's first four problems (golds 110, 142, 33, 124: three even,
one odd), all four in every step, with the scripted reward `scripted_replay`
(tests/helpers/multiprocess_entry.py): step 1 gives each even-answer group one success, step 2
the odd-answer group one success, later steps none. Which groups fail, and which prompts have a
stored success, is therefore known by hand at every step:

    step  failed groups        stored before the step   rows swapped (replay/uses)
    1     1 (the odd one)      none                     0
    2     3 (the even ones)    the 3 even prompts       3
    3+    4                    all 4 prompts            4
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY
from tests.helpers.processes import accelerate_launcher
from tests.test_resume import ENTRY, ROOT, TIMING

pytestmark = pytest.mark.e2e

REPLAY = [
    "data.max_examples=4",
    "recipe.rewards=[{name: scripted_replay, weight: 1.0}]",
    "recipe.replay.enabled=true",
    "recipe.replay.reward=scripted_replay",
    "trainer.eval.before=false",
    "trainer.eval.after=false",
]
KEYS = ("replay/uses", "replay/failed_groups", "replay/buffered_tasks")
SCHEDULE = {1: (0, 1, 3), 2: (3, 3, 4), 3: (4, 4, 4), 4: (4, 4, 4)}  # step: KEYS, by hand (docstring)


def train(
    *overrides: str, cwd: Path, processes: int = 1, fault: str | None = None, trace: Path | None = None
) -> subprocess.CompletedProcess:
    launcher = accelerate_launcher(processes)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    env.pop("RLRECIPES_TEST_FAULT", None)
    env.pop("RLRECIPES_TEST_REPLAY_TRACE", None)
    if fault:
        env["RLRECIPES_TEST_FAULT"] = fault
    if trace:
        trace.mkdir(exist_ok=True)
        env["RLRECIPES_TEST_REPLAY_TRACE"] = str(trace)
    command = [sys.executable, *launcher, ENTRY, "train", *TINY, *REPLAY, *overrides]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def rows(run_dir: Path) -> list[dict]:
    out = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in row.items() if k not in TIMING} for row in out]


def replay_counts(run_dir: Path) -> dict[int, tuple]:
    return {row["step"]: tuple(row[k] for k in KEYS) for row in rows(run_dir)}


# DAPO's dynamic sampling, filtering on the same scripted reward: a group replay made mixed is
# kept. Step 1: the odd group fails everywhere with nothing stored, so a second round is drawn
# (the refill stream is the same four prompts: 3 + 3 mixed groups, 2 surplus); step 2 on: replay
# makes every failed group mixed, so one round fills the batch.
DAPO = [
    "recipe=dapo",
    "recipe.dynamic_sampling.filter=scripted_replay",
    "recipe.dynamic_sampling.max_rounds=4",
    "trainer.max_steps=4",
    "trainer.checkpoints.every=2",
    "trainer.checkpoints.keep_last=2",
]
DAPO_ROUNDS = {1: (2, 2), 2: (1, 0), 3: (1, 0), 4: (1, 0)}  # step: rounds, surplus discarded
# replay/uses and replay/failed_groups count every round of a step: step 1 scores the odd group
# failed twice (no swap: nothing stored for it yet)
DAPO_SCHEDULE = {1: (0, 2, 3), 2: (3, 3, 4), 3: (4, 4, 4), 4: (4, 4, 4)}


@pytest.mark.parametrize("dapo", [False, True], ids=["grpo", "dapo"])
def test_two_processes_replay_as_scripted_with_the_same_buffer(dapo, toy_model_dir, tmp_path):
    """Each process holds two of a step's four groups; the successes are gathered, so both
    processes hold the same buffer and draw the same swaps. A buffer kept per process would
    find no stored success for a prompt whose earlier group the other process held. With
    dynamic sampling the kept groups may move between processes after the swaps."""
    run, trace = tmp_path / "run", tmp_path / "trace"
    settings = [*DAPO, "trainer.max_steps=3"] if dapo else ["trainer.max_steps=3"]
    out = train(f"run_dir={run}", *settings, cwd=tmp_path, processes=2, trace=trace)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert json.loads((run / "summary.json").read_text())["world_size"] == 2
    schedule = DAPO_SCHEDULE if dapo else SCHEDULE
    assert replay_counts(run) == {step: schedule[step] for step in (1, 2, 3)}
    if dapo:
        assert {r["step"]: r["dynamic_sampling/rounds"] for r in rows(run)} == {1: 2, 2: 1, 3: 1}
    ranks = [[json.loads(line) for line in (trace / f"rank-{r}.jsonl").read_text().splitlines()] for r in (0, 1)]
    assert [row["step"] for row in ranks[0]] == ([1, 1, 2, 3] if dapo else [1, 2, 3])
    assert ranks[0] == ranks[1]  # same buffer contents and draw state after every scoring round


@pytest.fixture(scope="module")
def dapo_uninterrupted(tmp_path_factory, toy_model_dir):
    folder = tmp_path_factory.mktemp("dapo")
    out = train(f"run_dir={folder / 'run'}", *DAPO, cwd=folder, trace=folder / "trace")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return folder


def traced(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rank-0.jsonl").read_text().splitlines()]


def test_replay_with_dynamic_sampling_keeps_the_groups_it_made_mixed(dapo_uninterrupted):
    run = dapo_uninterrupted / "run"
    got = rows(run)
    assert replay_counts(run) == DAPO_SCHEDULE
    assert {r["step"]: (r["dynamic_sampling/rounds"], r["dynamic_sampling/surplus_discarded"]) for r in got} == (
        DAPO_ROUNDS
    )
    assert all(r["dynamic_sampling/prompts_kept"] == 4 for r in got)


def test_a_killed_replay_run_resumes_with_its_buffer(dapo_uninterrupted, tmp_path):
    """Killed after step 3, resumed from checkpoint-2: steps 3 and 4 swap into all four groups
    only if the checkpoint restored the buffer (a fresh one holds nothing, no group is mixed and
    dynamic sampling gives up), and the buffer and draw state after each resumed step are the
    uninterrupted run's, and so is every logged value: every step here is a whole epoch of the
    four problems, and a resumed epoch draws the uninterrupted run's prompt order
    (engine/epoch_order.py)."""
    run, trace = tmp_path / "run", tmp_path / "trace"
    died = train(f"run_dir={run}", *DAPO, cwd=tmp_path, fault="kill_after_step:3", trace=trace)
    assert died.returncode == -9, died.stdout[-3000:] + died.stderr[-3000:]
    resumed = train(f"run_dir={run}", *DAPO, "resume=true", cwd=tmp_path, trace=trace)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "(step 2)" in resumed.stdout
    got, want = rows(run), rows(dapo_uninterrupted / "run")
    assert [r["step"] for r in got] == [1, 2, 3, 4]
    assert replay_counts(run) == DAPO_SCHEDULE
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            same = (
                a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6) if isinstance(a[key], float) else a[key] == b[key]
            )
            assert same, (a["step"], key, a[key], b[key])
    uninterrupted = traced(dapo_uninterrupted / "trace")
    assert [r["step"] for r in traced(trace)] == [1, 1, 2, 3, 3, 4]  # killed after step 3, resumed at 3
    assert traced(trace)[-2:] == uninterrupted[-2:]

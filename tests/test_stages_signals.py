"""`rlrecipes stages` and the processes of its stages: a signal to the command ends the running
stage and waits for it, a killed command takes its stage down with it, and neither a second
stages command nor a resume runs while a stage process of the pipeline is alive. A torn stage
summary is one line.

The stage processes are `tests/helpers/stage_child.py` (`launcher=`): they do to their run
directory what `rlrecipes sft|train` do, without a model, and write where the tests wait.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import cli, one_error_line
from tests.helpers.processes import alive

ROOT = Path(__file__).resolve().parents[1]
CHILD = ROOT / "tests" / "helpers" / "stage_child.py"
LAUNCHER = f"launcher=['{sys.executable}','{CHILD}']"
ENV = {**os.environ, "COLUMNS": "400", "PYTHONPATH": str(ROOT)}


def start(parent: Path, *args: str, linger: bool = False) -> subprocess.Popen:
    """`rlrecipes stages` on the toy pipeline with the stand-in stage processes; its output goes
    to PARENT.out (a file: a pipe would stay open while an orphaned stage holds it)."""
    env = {**ENV, "STAGE_CHILD_WAIT": "1", "STAGE_CHILD_LINGER": "1" if linger else "0"}
    command = [sys.executable, "-m", "rlrecipes.cli", "stages", f"run_dir={parent}", *args]
    with open(output_file(parent), "w") as out:
        return subprocess.Popen(command, cwd=parent.parent, env=env, stdout=out, stderr=subprocess.STDOUT)


def output_file(parent: Path) -> Path:
    return parent.with_name(parent.name + ".out")


def stages(parent: Path, *args: str) -> tuple[int, str]:
    """`rlrecipes stages` to its end: (exit status, output)."""
    command = [sys.executable, "-m", "rlrecipes.cli", "stages", f"run_dir={parent}", *args]
    with open(parent.with_name("second.out"), "w") as out:
        code = subprocess.run(command, cwd=parent.parent, env=ENV, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    return code.returncode, parent.with_name("second.out").read_text()


def wait_for(path: Path, what: str, process: subprocess.Popen | None = None, limit_s: float = 600) -> str:
    """The text of `path` once it holds a whole line (a guard against a hang, not a timing: the
    test fails only if it never appears, or `process` ended first). A line, not the file's
    existence: the stage opens signals.log to append before it writes the signal's name."""
    deadline = time.monotonic() + limit_s
    while not (path.exists() and path.read_text().endswith("\n")):
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what}: the process ended first ({process.returncode}):\n{process.args}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: {path} never appeared")
        time.sleep(0.05)
    return path.read_text()


@pytest.fixture
def pipeline(tmp_path):
    """The parent directory; afterwards every process the test started there is ended by its pid."""
    parent = tmp_path / "pipeline"
    started: list[subprocess.Popen] = []
    yield parent, started
    pids = [p.pid for p in started if p.poll() is None]
    child = parent / "2-rl" / "child.pid"
    if child.exists() and alive(int(child.read_text())):
        pids.append(int(child.read_text()))
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for process in started:
        process.wait()


@pytest.mark.integration
@pytest.mark.parametrize("sig", [pytest.param(s, id=s.name) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)])
def test_a_signal_to_stages_ends_the_running_stage_and_waits_for_it(sig, pipeline):
    parent, started = pipeline
    command = start(parent, LAUNCHER, linger=True)
    started.append(command)
    child = int(wait_for(parent / "2-rl" / "child.pid", "the rl stage's process", command))
    command.send_signal(sig)
    # the stage got SIGTERM and is saving (it lingers): the stages command waits for it
    assert wait_for(parent / "2-rl" / "signals.log", "the stage's SIGTERM", command, limit_s=60) == "SIGTERM\n"
    assert command.poll() is None and alive(child)
    (parent / "2-rl" / "release").touch()
    command.wait(timeout=600)
    out = output_file(parent).read_text()
    assert command.returncode == 128 + sig, out[-3000:]
    assert not alive(child)  # waited for (reaped) before the command exited
    text = " ".join(out.split())
    assert (
        f"interrupted: {signal.Signals(sig).name}: stage 2 (rl) was stopped (exit status 143); finished stages are "
        f"kept; continue with: rlrecipes stages resume=true run_dir={parent}"
    ) in text
    assert "Traceback" not in out


@pytest.mark.integration
def test_a_killed_stages_command_takes_its_running_stage_down(pipeline):
    """SIGKILL leaves the command no chance to act: Linux sends the stage SIGTERM (PDEATHSIG)."""
    parent, started = pipeline
    command = start(parent, LAUNCHER)
    started.append(command)
    child = int(wait_for(parent / "2-rl" / "child.pid", "the rl stage's process", command))
    command.kill()
    command.wait()
    # once per thread of the killed command that the stage is handed to as it dies: SIGTERM only
    got = wait_for(parent / "2-rl" / "signals.log", "the orphaned stage's SIGTERM", limit_s=60)
    assert got.startswith("SIGTERM\n") and set(got.split()) == {"SIGTERM"}
    deadline = time.monotonic() + 120
    while alive(child) and time.monotonic() < deadline:  # it exits on its own
        time.sleep(0.05)
    assert not alive(child)


@pytest.mark.integration
def test_no_second_stages_command_runs_a_pipeline_whose_stage_is_alive(pipeline):
    parent, started = pipeline
    first = start(parent, LAUNCHER, linger=True)
    started.append(first)
    child = int(wait_for(parent / "2-rl" / "child.pid", "the rl stage's process", first))

    # the pipeline's command runs: the parent directory is its
    code, out = stages(parent, "resume=true")
    assert code == 2, out[-3000:]
    assert one_error_line(out).startswith(f"error: run_dir={parent} is in use by another process (pid {first.pid})")

    # the command was killed, its stage is still saving: a resume must not start a second writer
    first.kill()
    first.wait()
    assert alive(child)
    code, out = stages(parent, "resume=true")
    assert code == 2, out[-3000:]
    assert one_error_line(out).startswith(
        f"error: stage 2 (rl): run_dir={parent / '2-rl'} is in use by another process (pid {child})"
    )
    assert len((parent / "2-rl" / "starts.log").read_text().splitlines()) == 1

    (parent / "2-rl" / "release").touch()  # the stage ends: now the pipeline resumes
    deadline = time.monotonic() + 120
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    code, out = stages(parent, "resume=true")
    assert code == 0, out[-3000:]
    assert [line.split()[1] for line in (parent / "2-rl" / "starts.log").read_text().splitlines()] == [
        "model.name_or_path=" + str(parent / "1-prime" / "model"),
        "resume=true",
    ]
    assert [s["steps"] for s in json.loads((parent / "summary.json").read_text())["stages"]] == [1, 2]


def torn_pipeline(parent: Path) -> Path:
    """A pipeline whose first stage finished with a summary.json cut short (the second is new)."""
    from rlrecipes.compose import compose_config
    from rlrecipes.rundir import write_manifest

    parent.mkdir()
    write_manifest(parent, compose_config("stages", [f"run_dir={parent}", LAUNCHER]))
    prime = parent / "1-prime"
    prime.mkdir()
    (prime / "config.yaml").write_text("stage: sft\n")
    (prime / "summary.json").write_text('{"steps": 60, "loss_bef')
    return prime / "summary.json"


def test_a_torn_stage_summary_is_one_line_naming_it(tmp_path, capsys):
    torn = torn_pipeline(tmp_path / "pipeline")
    code, text = cli(capsys, "stages", "resume=true", f"run_dir={tmp_path / 'pipeline'}")
    assert code == 2
    line = one_error_line(text)
    assert line.startswith(f"error: {torn}: not valid JSON (")
    assert "restore it, or remove it and the stage finishes again from its last checkpoint" in line
    assert not (tmp_path / "pipeline" / "2-rl").exists()  # nothing ran


def test_report_on_a_pipeline_with_a_torn_summary_is_one_line(tmp_path, capsys):
    """`rlrecipes report PARENT` reads the parent's own summary.json (to find its stages' rows;
    a stage's is read by `report PARENT/*`): both are one line when torn."""
    torn = torn_pipeline(tmp_path / "pipeline")
    (tmp_path / "pipeline" / "summary.json").write_text(torn.read_text())
    for path, bad in ((tmp_path / "pipeline", tmp_path / "pipeline" / "summary.json"), (torn.parent, torn)):
        code, text = cli(capsys, "report", str(path))
        assert code == 2 and one_error_line(text).startswith(f"error: {bad}: not valid JSON (")

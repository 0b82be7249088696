"""One process at a time writes in a run directory (`rundir.lock_run_dir`: a `flock` held for
the process's life, released by the kernel when it dies), so two resumes of one run never both
train; and what else a resume must survive: free-form settings (`rollout.tool_kwargs`) and a
checkpoint holding pickled weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file, save_file

from rlrecipes.rundir import LOCK, RunDirError, create_run_dir, discard_unstarted_run, lock_run_dir, write_manifest
from tests.conftest import TINY, cli, compose, one_error_line

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
# another process that takes a run directory's lock, says so, and holds it until its stdin closes
HOLD = (
    "import sys; from pathlib import Path; from rlrecipes.rundir import lock_run_dir; "
    "lock_run_dir(Path(sys.argv[1])); print('locked', flush=True); sys.stdin.read()"
)
# another process that tries to take it: prints `locked` or the one-line refusal
TRY = (
    "import sys; from pathlib import Path; from rlrecipes.rundir import RunDirError, lock_run_dir\n"
    "try:\n    lock_run_dir(Path(sys.argv[1])); print('locked')\nexcept RunDirError as e:\n    print(e)"
)


@pytest.fixture
def holder():
    """`holder(run)`: a process holding `run`'s lock (killed by its pid afterwards)."""
    started: list[subprocess.Popen] = []

    def hold(run: Path) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV
        )
        started.append(process)
        assert process.stdout.readline() == "locked\n"
        return process

    yield hold
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


def try_lock(run: Path) -> str:
    return subprocess.run(
        [sys.executable, "-c", TRY, str(run)], capture_output=True, text=True, env=ENV, check=True
    ).stdout.strip()


def test_a_run_another_process_holds_is_refused_in_one_line_and_freed_when_that_process_is_killed(holder, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    other = holder(run)
    assert (run / LOCK).read_text() == f"{other.pid}\n"
    with pytest.raises(RunDirError) as refused:
        lock_run_dir(run)
    assert str(refused.value) == (
        f"run_dir={run} is in use by another process (pid {other.pid}); wait for it to end, or stop it "
        f"(kill {other.pid}), then run the command again"
    )
    other.send_signal(signal.SIGKILL)  # no chance to clean up: the kernel drops its lock
    other.wait()
    lock_run_dir(run)
    assert (run / LOCK).read_text() == f"{os.getpid()}\n"
    assert try_lock(run).startswith(f"run_dir={run} is in use by another process (pid {os.getpid()})")


def test_the_lock_file_is_never_followed_through_a_link(tmp_path):
    run, elsewhere = tmp_path / "run", tmp_path / "notes.txt"
    run.mkdir()
    elsewhere.write_text("keep me\n")
    (run / LOCK).symlink_to(elsewhere)
    with pytest.raises(RunDirError, match=r"^cannot open .*\.lock \(it is a symbolic link\); [^\n]*$"):
        lock_run_dir(run)
    assert elsewhere.read_text() == "keep me\n"


def test_a_run_discarded_before_its_first_step_leaves_no_lock_and_its_folder_can_be_used_again(tmp_path):
    run = create_run_dir(str(tmp_path / "run"), "unused", "x")
    write_manifest(run, OmegaConf.create({"seed": 1}))
    assert try_lock(run).startswith(f"run_dir={run} is in use by another process (pid {os.getpid()})")
    discard_unstarted_run(run)
    assert not run.exists()
    again = create_run_dir(str(tmp_path / "run"), "unused", "x")  # a new folder: locked anew
    assert try_lock(again).startswith(f"run_dir={again} is in use by another process (pid {os.getpid()})")


def saved_run(tmp_path: Path, command: str) -> Path:
    """A run killed before its first complete checkpoint: checkpoint-1 was cut short."""
    from rlrecipes.compose import compose_config

    run = tmp_path / "run"
    (run / "checkpoints" / "checkpoint-1").mkdir(parents=True)
    cfg = compose() if command == "train" else compose_config("sft", ["trainer.max_steps=2"])
    write_manifest(run, cfg)
    return run


@pytest.mark.parametrize(
    "command, job",
    [("train", "rlrecipes.training.job.train"), ("sft", "rlrecipes.training.sft.sft")],
    ids=["train", "sft"],
)
def test_a_resume_of_a_run_another_process_trains_in_is_refused_before_it_touches_the_run(
    command, job, holder, tmp_path, capsys, monkeypatch
):
    def second_writer(*args, **kwargs):
        raise AssertionError("the refused resume trained")

    monkeypatch.setattr(job, second_writer)
    run = saved_run(tmp_path, command)
    other = holder(run)
    code, text = cli(capsys, command, "resume=true", f"run_dir={run}")
    assert code == 2
    assert one_error_line(text) == (
        f"error: run_dir={run} is in use by another process (pid {other.pid}); wait for it to end, or stop it "
        f"(kill {other.pid}), then run the command again"
    )
    # what a resume changes first is as the other process left it
    assert (run / "checkpoints" / "checkpoint-1").is_dir() and not (run / "resumes.log").exists()


def test_an_eval_resume_of_a_run_another_process_evaluates_in_is_refused(holder, tmp_path):
    from rlrecipes.compose import compose_config
    from rlrecipes.eval.rundir import open_run_dir

    run = tmp_path / "eval"
    run.mkdir()
    write_manifest(run, compose_config("eval", ["benchmark=aime24", f"run_dir={run}"]))
    other = holder(run)
    cfg = compose_config("eval", ["benchmark=aime24", f"run_dir={run}", "resume=true"])
    with pytest.raises(RunDirError, match=rf"^run_dir={run} is in use by another process \(pid {other.pid}\)"):
        open_run_dir(cfg, None, None)


@pytest.mark.parametrize(
    "command, settings, key, value",
    [
        pytest.param(
            "train",
            ["rollout.tools=[calculator]", "+rollout.tool_kwargs.calculator.max_digits=50"],
            "rollout.tool_kwargs",
            {"calculator": {"max_digits": 50}},
            id="train-tool_kwargs",
        ),
        pytest.param(
            "train",
            ["+trainer.lr_scheduler_kwargs.min_lr_rate=0.1"],
            "trainer.lr_scheduler_kwargs",
            {"min_lr_rate": 0.1},
            id="train-lr_scheduler_kwargs",
        ),
        pytest.param(
            "sft",
            ["+trainer.lr_scheduler_kwargs.min_lr_rate=0.1"],
            "trainer.lr_scheduler_kwargs",
            {"min_lr_rate": 0.1},
            id="sft-lr_scheduler_kwargs",
        ),
    ],
)
def test_a_run_with_free_form_settings_resumes_with_them(command, settings, key, value, tmp_path):
    """`rollout.tool_kwargs` and `trainer.lr_scheduler_kwargs` are dicts no dataclass types: the
    run's keys in them must fit the schema they are restored into, and stay the run's."""
    from omegaconf.errors import ConfigAttributeError

    from rlrecipes.compose import compose_config
    from rlrecipes.training.resume import resumed_config
    from rlrecipes.training.sft_resume import resumed_sft_config

    run = tmp_path / "run"
    run.mkdir()
    write_manifest(run, compose_config(command, [*(TINY if command == "train" else []), *settings]))
    overrides = ["resume=true", f"run_dir={run}"]
    resumed = resumed_config if command == "train" else resumed_sft_config
    cfg, changes = resumed(compose_config(command, overrides), overrides)
    assert OmegaConf.to_container(OmegaConf.select(cfg, key)) == value and changes == []
    with pytest.raises(ConfigAttributeError):  # a typo stays an error, as in a composed config
        OmegaConf.select(cfg, key).not_a_setting  # noqa: B018


def checkpoint(folder: Path, weights: dict) -> Path:
    """A complete checkpoint as HF and rlrecipes write it, with `weights` as model.safetensors."""
    from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER, ENGINE_STATE

    folder.mkdir(parents=True)
    save_file(weights, folder / "model.safetensors")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": int(folder.name.split("-")[1])}))
    torch.save({"hooks": [], "dynamic_sampling": None, "job": {}}, folder / ENGINE_STATE)
    (folder / CHECKPOINT_MARKER).write_text(json.dumps({"step": int(folder.name.split("-")[1])}))
    return folder


class Payload:
    """Unpickling this runs `os.system`, which creates a marker file."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_checkpoint_holding_pickled_weights_is_set_aside_and_never_loaded(tmp_path):
    from rlrecipes.engine.checkpoints import usable_checkpoint

    marker, weights = tmp_path / "code-ran", {"w": torch.ones(2, 2)}
    checkpoint(tmp_path / "checkpoints" / "checkpoint-2", weights)
    planted = checkpoint(tmp_path / "checkpoints" / "checkpoint-4", weights)
    (planted / "model.safetensors").unlink()  # HF's resume would unpickle this one instead
    torch.save(Payload(marker), planted / "pytorch_model.bin")
    lines: list[str] = []
    assert usable_checkpoint(tmp_path / "checkpoints", lines.append) == tmp_path / "checkpoints" / "checkpoint-2"
    assert lines == [
        "checkpoint-4 cannot be resumed from: pytorch_model.bin is damaged (it holds pickled Python objects beyond "
        "tensors and plain values, which are never loaded); moved to damaged-checkpoint-4"
    ]
    assert (tmp_path / "checkpoints" / "damaged-checkpoint-4" / "pytorch_model.bin").is_file()
    assert not marker.exists()


def test_torch_weights_of_tensors_alone_keep_their_checkpoint(tmp_path):
    """FSDP's full-state checkpoints hold pytorch_model_fsdp.bin and optimizer.bin: tensors in
    a torch file, read with weights_only=True; they stay resumable."""
    from rlrecipes.engine.checkpoints import usable_checkpoint

    fsdp = checkpoint(tmp_path / "checkpoint-2", {"w": torch.ones(2, 2)})
    torch.save({"w": torch.ones(2, 2)}, fsdp / "pytorch_model_fsdp.bin")
    torch.save({"state": {0: {"step": torch.tensor(2.0)}}, "param_groups": [{"lr": 1e-3}]}, fsdp / "optimizer.bin")
    assert usable_checkpoint(tmp_path, lambda line: pytest.fail(line)) == fsdp


# --- the real commands, several processes: e2e ---------------------------------------------

ENTRY = str(ROOT / "tests" / "helpers" / "multiprocess_entry.py")
SETTINGS = [
    *TINY,
    "trainer.max_steps=4",
    "trainer.checkpoints.every=1",
    "trainer.eval.before=false",
    "trainer.eval.after=false",
]


def train(*overrides: str, cwd: Path, fault: str | None = None) -> subprocess.Popen:
    env = {**ENV, "OMP_NUM_THREADS": "1", "COLUMNS": "400"}
    env.pop("RLRECIPES_TEST_FAULT", None)
    if fault:
        env["RLRECIPES_TEST_FAULT"] = fault
    return subprocess.Popen(
        [sys.executable, ENTRY, "train", *overrides],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finished(process: subprocess.Popen) -> tuple[int, str]:
    out = process.communicate(timeout=600)[0]
    return process.returncode, out


def steps(run: Path) -> list[int]:
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.e2e
def test_two_resumes_of_one_run_at_once_one_is_refused_and_the_run_is_the_others(toy_model_dir, tmp_path):
    run = tmp_path / "run"
    code, out = finished(train(*SETTINGS, f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:2"))
    assert code == -signal.SIGKILL, out[-3000:]
    first = train("resume=true", f"run_dir={run}", cwd=tmp_path, fault="stop_after_step:3")
    try:
        _, status = os.waitpid(first.pid, os.WUNTRACED)  # it stops itself after step 3, mid-run
        assert os.WIFSTOPPED(status), f"the first resume ended instead (status {status})"
        code, out = finished(train("resume=true", f"run_dir={run}", cwd=tmp_path))
        assert code == 2, out[-3000:]
        assert one_error_line(out) == (
            f"error: run_dir={run} is in use by another process (pid {first.pid}); wait for it to end, or stop "
            f"it (kill {first.pid}), then run the command again"
        )
        assert len((run / "resumes.log").read_text().splitlines()) == 1  # only the first's
        first.send_signal(signal.SIGCONT)
        code, out = finished(first)
        assert code == 0, out[-3000:]
    finally:
        if first.poll() is None:  # a failed assertion above: no process of the test outlives it
            first.kill()
            first.wait()
    assert steps(run) == [1, 2, 3, 4]  # one writer: no step logged twice
    assert json.loads((run / "summary.json").read_text())["steps"] == 4


@pytest.mark.e2e
def test_a_planted_pytorch_model_bin_sets_its_checkpoint_aside_on_resume(toy_model_dir, tmp_path):
    """HF's resume reads pytorch_model.bin when a checkpoint has no model.safetensors: a
    pickle there failed every resume with a traceback; now its checkpoint is set aside."""
    run, marker = tmp_path / "run", tmp_path / "code-ran"
    code, out = finished(train(*SETTINGS, f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:3"))
    assert code == -signal.SIGKILL, out[-3000:]
    last = run / "checkpoints" / "checkpoint-2"  # the last complete one: step 3 was logged, then killed
    load_file(last / "model.safetensors")
    (last / "model.safetensors").unlink()
    torch.save(Payload(marker), last / "pytorch_model.bin")
    code, out = finished(train("resume=true", f"run_dir={run}", cwd=tmp_path))
    assert code == 0 and "Traceback" not in out, out[-3000:]
    text = " ".join(out.split())
    assert "checkpoint-2 cannot be resumed from: pytorch_model.bin is damaged (it holds pickled Python objects" in text
    assert "(step 1)" in text and steps(run) == [1, 2, 3, 4]
    assert (run / "checkpoints" / "damaged-checkpoint-2" / "pytorch_model.bin").is_file()
    assert not marker.exists()

"""eval-checkpoints over a run with torn checkpoint folders, and its progress lines."""

import json

import pytest

from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER
from rlrecipes.errors import UserError
from rlrecipes.runs.checkpoints import CHECKPOINT_SUITES, find_checkpoints, sweep, torn_reason


def weights(folder, truncate: bool = False):
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.arange(64, dtype=torch.float32)}, str(folder / "model.safetensors"))
    if truncate:  # a save killed halfway through the file
        data = (folder / "model.safetensors").read_bytes()
        (folder / "model.safetensors").write_bytes(data[: len(data) - 100])


def checkpoint(run, step, marker=True, has_weights=True, truncate=False):
    folder = run / "checkpoints" / f"checkpoint-{step}"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    if has_weights:
        weights(folder, truncate)
    if marker:
        (folder / CHECKPOINT_MARKER).write_text(json.dumps({"step": step}))
    return folder


@pytest.fixture
def run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    checkpoint(run, 10)
    checkpoint(run, 20, marker=False)  # cut short before the marker
    checkpoint(run, 30, has_weights=False)
    checkpoint(run, 40, truncate=True)
    checkpoint(run, 50)
    return run


def test_torn_checkpoints_are_skipped_with_one_line_each(run):
    notes: list[str] = []
    found = find_checkpoints(run, log=notes.append)
    assert [c.step for c in found] == [0, 10, 30, 40, 50]
    assert notes == [f"skipping checkpoint-20: torn (no {CHECKPOINT_MARKER}; the save was cut short)"]
    evaluated = []

    def evaluate(ckpt, part, out):
        evaluated.append(ckpt.step)
        return {"arithmetic": ckpt.step / 100}

    selection = sweep(found, CHECKPOINT_SUITES["synthetic"][:1], run / "out", evaluate, log=notes.append)
    assert evaluated == [0, 10, 50] and selection.steps == [0, 10, 50] and selection.best_step == 50
    skipped = [n for n in notes if n.startswith("skipping checkpoint ")]
    assert len(skipped) == 2 and all("\n" not in n for n in skipped)
    assert "checkpoint 30 " in skipped[0] and skipped[0].endswith("torn, no weights")
    assert "checkpoint 40 " in skipped[1] and "model.safetensors does not load" in skipped[1]


def test_a_run_without_markers_keeps_its_checkpoints(tmp_path):
    """Runs saved before the completion marker existed have none on any checkpoint."""
    run = tmp_path / "old"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\n")
    for step in (5, 10):
        checkpoint(run, step, marker=False)
    assert [c.step for c in find_checkpoints(run, include_base=False, log=lambda _: None)] == [5, 10]
    assert torn_reason(run / "checkpoints" / "checkpoint-5") is None


def test_sharded_weights_with_a_missing_shard_are_torn(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})
    )
    weights(tmp_path)
    (tmp_path / "model.safetensors").rename(tmp_path / "model-00001-of-00002.safetensors")
    assert torn_reason(tmp_path) == "missing shard model-00002-of-00002.safetensors"


def test_progress_lines_count_the_evaluations_and_all_torn_is_one_line(run):
    lines: list[str] = []
    found = [c for c in find_checkpoints(run, log=lines.append) if c.step in (0, 10)]
    sweep(found, CHECKPOINT_SUITES["synthetic"], run / "out", lambda c, p, o: {"arithmetic": 0.5}, log=lines.append)
    progress = [line for line in lines if line.startswith("checkpoint ")]
    assert len(progress) == 4
    assert progress[0].startswith("checkpoint 1/2 (step 0), part 1/2 [arithmetic]: 0/4 evaluations done")
    assert progress[3].startswith("checkpoint 2/2 (step 10), part 2/2 [arithmetic]: 3/4 evaluations done")
    assert all("elapsed, ETA" in line for line in progress)
    torn = [c for c in find_checkpoints(run, include_base=False, log=lambda _: None) if c.step in (30, 40)]
    with pytest.raises(UserError, match="no checkpoint was evaluated"):
        sweep(
            torn, CHECKPOINT_SUITES["synthetic"], run / "out", lambda c, p, o: {"arithmetic": 0.5}, log=lambda _: None
        )

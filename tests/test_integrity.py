"""Nothing a run directory holds can execute code: every file a resume loads is read as
JSON, safetensors, or torch with `weights_only=True`, and a planted pickle is reported as a
damaged file (one line, naming it) and never run."""

import ast
import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER, usable_checkpoint
from rlrecipes.integrity import DamagedFile, content_digest, file_problem, load_torch_state

PACKAGE = Path(__file__).resolve().parents[1] / "rlrecipes"


class Payload:
    """Unpickling this runs `os.system`, which creates a marker file: what an attacker plants."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def good_checkpoint(folder: Path) -> Path:
    """A checkpoint with every file HF's Trainer and rlrecipes write and read back on resume."""
    folder.mkdir(parents=True)
    save_file({"w": torch.ones(2, 2)}, folder / "model.safetensors")
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": 2}))
    torch.save({"state": {0: {"step": torch.tensor(2.0)}}, "param_groups": [{"lr": 1e-3}]}, folder / "optimizer.pt")
    torch.save({"last_epoch": 2, "_step_count": 3}, folder / "scheduler.pt")
    torch.save({"python": (3, (1, 2), None), "cpu": torch.get_rng_state()}, folder / "rng_state.pth")
    torch.save({"hooks": [], "dynamic_sampling": None, "job": {"accuracy_before": 0.5}}, folder / "engine_state.pt")
    (folder / CHECKPOINT_MARKER).write_text(json.dumps({"step": int(folder.name.split("-")[1])}))
    return folder


LOADED = ["engine_state.pt", "optimizer.pt", "scheduler.pt", "rng_state.pth", "model.safetensors", "trainer_state.json"]


@pytest.mark.parametrize("name", LOADED)
def test_a_planted_pickle_in_any_checkpoint_file_never_runs_and_the_previous_checkpoint_is_used(name, tmp_path):
    marker = tmp_path / "code-ran"
    good_checkpoint(tmp_path / "checkpoints" / "checkpoint-2")
    last = good_checkpoint(tmp_path / "checkpoints" / "checkpoint-4")
    torch.save(Payload(marker), last / name)
    lines: list[str] = []
    assert file_problem(last / name) is not None  # what resume checks first
    assert usable_checkpoint(tmp_path / "checkpoints", lines.append) == tmp_path / "checkpoints" / "checkpoint-2"
    assert not marker.exists()
    assert lines == [lines[0]] and lines[0].startswith(f"checkpoint-4 cannot be resumed from: {name} is damaged (")
    assert (tmp_path / "checkpoints" / "damaged-checkpoint-4" / name).is_file()


def test_loading_a_planted_engine_state_is_one_line_naming_the_file(tmp_path):
    marker = tmp_path / "code-ran"
    torch.save(Payload(marker), tmp_path / "engine_state.pt")
    with pytest.raises(DamagedFile) as err:
        load_torch_state(tmp_path / "engine_state.pt")
    assert not marker.exists()
    text = str(err.value)
    assert "\n" not in text and str(tmp_path / "engine_state.pt") in text and "pickled Python objects" in text


def test_a_good_checkpoint_reads_back_and_a_truncated_one_is_named(tmp_path):
    good = good_checkpoint(tmp_path / "checkpoint-2")
    assert [file_problem(p) for p in sorted(good.iterdir())] == [None] * 8
    weights = good / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-4])
    assert (
        file_problem(weights)
        == f"{weights.stat().st_size} bytes where its header promises {weights.stat().st_size + 4}"
    )
    assert usable_checkpoint(tmp_path, lambda _: None) is None  # nothing usable: the run starts again


def test_the_content_digest_notices_one_flipped_byte(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"\x00\x01")
    before = content_digest(tmp_path)
    (tmp_path / "a.bin").write_bytes(b"\x00\x02")
    assert content_digest(tmp_path) != before


def unsafe_loads(source: str) -> list[int]:
    """Lines calling `pickle.load(s)`/`dill.load(s)`, or `torch.load` without `weights_only=True`."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = ast.unparse(node.func.value)
        safe = any(k.arg == "weights_only" and ast.unparse(k.value) == "True" for k in node.keywords)
        if (owner in ("pickle", "dill", "cloudpickle") and node.func.attr in ("load", "loads")) or (
            owner == "torch" and node.func.attr == "load" and not safe
        ):
            lines.append(node.lineno)
    return lines


def test_the_unsafe_load_finder_finds_what_it_names():
    source = "torch.load(p)\ntorch.load(p, weights_only=False)\npickle.loads(b)\ntorch.load(p, weights_only=True)\n"
    assert unsafe_loads(source) == [1, 2, 3]


def test_no_module_unpickles_project_files():
    """The rule (CONTRIBUTING.md): no `pickle.load`, no `torch.load` without `weights_only=True`."""
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in PACKAGE.rglob("*.py")
        for line in unsafe_loads(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []

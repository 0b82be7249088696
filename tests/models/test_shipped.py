"""Shipped toy models (rlrecipes/models/shipped.py): a config a shipped toy was built from starts
from its weights on every machine, checked against its recorded sha256; `model.toy.rebuild=true`
and an unmatched config build here; the shipped index agrees with the commands it lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlrecipes.errors import UserError
from rlrecipes.integrity import content_digest
from rlrecipes.models import resolve_model_path, shipped, toy_key
from rlrecipes.models.cache import RECORD, digest
from tests.conftest import compose

CFG = compose()  # the tests' tiny toy


def _ship(root: Path, cfg, name: str = "tiny") -> Path:
    """A shipped-toy folder for `cfg` (files whose content stands in for weights) and its index."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "qwen3"}')
    (folder / "model.safetensors").write_bytes(b"weights of the shipped toy")
    key = toy_key(cfg.model, cfg.data.synthetic)
    (folder / RECORD).write_text(json.dumps(key))
    entry = {
        "key_digest": digest(key),
        "content_sha256": content_digest(folder, exclude=shipped.NOT_SHIPPED),
        "commit": "0123456789abcdef",
        "command": "rlrecipes train (tiny)",
    }
    (root / "index.json").write_text(json.dumps({"toys": {name: entry}}))
    return folder


@pytest.fixture
def shipped_root(tmp_path, monkeypatch):
    root = tmp_path / "shipped_toys"
    monkeypatch.setattr(shipped, "SHIPPED_ROOT", root)
    return root


@pytest.fixture
def builds(monkeypatch):
    """Every from-scratch build, recorded instead of run (it writes a stand-in model)."""
    made = []

    def build_toy(folder, model_cfg, task, log=print):
        made.append(folder)
        (folder / "config.json").write_text('{"model_type": "qwen3", "built": "here"}')

    monkeypatch.setattr("rlrecipes.models.toy.build_toy", build_toy)
    return made


def test_a_shipped_toy_is_copied_into_the_cache_and_nothing_is_built(tmp_path, shipped_root, builds):
    _ship(shipped_root, CFG)
    logs: list[str] = []
    path = Path(resolve_model_path(CFG.model, object(), CFG.data.synthetic, str(tmp_path / "cache"), logs.append))
    assert builds == []
    assert (path / "model.safetensors").read_bytes() == b"weights of the shipped toy"
    assert json.loads((path / RECORD).read_text())["shipped"] == shipped.index()["tiny"].content_sha256
    assert any("the shipped 'tiny' (built by `rlrecipes train (tiny)` at commit 0123456789ab)" in line for line in logs)
    again = resolve_model_path(CFG.model, object(), CFG.data.synthetic, str(tmp_path / "cache"), logs.append)
    assert again == str(path) and builds == []


def test_rebuild_builds_here_in_a_cache_entry_of_its_own(tmp_path, shipped_root, builds):
    _ship(shipped_root, CFG)
    rebuilt = compose("model.toy.rebuild=true")
    logs: list[str] = []
    path = Path(resolve_model_path(rebuilt.model, object(), rebuilt.data.synthetic, str(tmp_path / "c"), logs.append))
    assert builds and json.loads((path / "config.json").read_text())["built"] == "here"
    assert "toy model: building one on this machine (model.toy.rebuild=true)" in logs[0]
    used = Path(resolve_model_path(CFG.model, object(), CFG.data.synthetic, str(tmp_path / "c"), logs.append))
    assert used != path and (used / "model.safetensors").is_file()  # the shipped one, not the rebuilt


def test_a_config_no_shipped_toy_matches_is_built_and_says_why(tmp_path, shipped_root, builds):
    _ship(shipped_root, CFG)
    other = compose("model.toy.seed=1")
    logs: list[str] = []
    resolve_model_path(other.model, object(), other.data.synthetic, str(tmp_path / "c"), logs.append)
    assert len(builds) == 1
    assert "no shipped toy matches these model.toy and data settings (shipped: tiny)" in logs[0]


def test_altered_shipped_weights_are_one_line_and_never_used(tmp_path, shipped_root, builds):
    folder = _ship(shipped_root, CFG)
    (folder / "model.safetensors").write_bytes(b"weights of another model")
    with pytest.raises(UserError, match=r"shipped toy model 'tiny' .* does not match the sha256 its index records"):
        resolve_model_path(CFG.model, object(), CFG.data.synthetic, str(tmp_path / "c"), lambda _: None)
    assert builds == [] and not list((tmp_path / "c" / "toy").glob("*/model.safetensors"))


def test_a_torn_index_is_one_line(shipped_root):
    shipped_root.mkdir()
    (shipped_root / "index.json").write_text('{"toys": {"tiny": {"key_digest": "ab"}}}')
    with pytest.raises(UserError, match=r"index.json is not a shipped-toy index .*reinstall rlrecipes"):
        shipped.index()


@pytest.mark.parametrize("name", sorted(shipped.index()))
def test_every_shipped_toy_is_what_its_command_builds(name):
    """The shipped files hash to the index's sha256, and the command the index lists composes the
    key the toy was built from today: a changed default (a new data.synthetic option, a recipe's
    warm-start key) that would leave a shipped toy unreachable fails here, not on users' machines."""
    from rlrecipes.compose import compose_config
    from rlrecipes.training.plan import plan_run

    toy = shipped.index()[name]
    assert content_digest(toy.folder, exclude=shipped.NOT_SHIPPED) == toy.content_sha256
    entry = json.loads((shipped.SHIPPED_ROOT / shipped.INDEX_NAME).read_text())["toys"][name]
    cfg = compose_config("train", entry["overrides"])
    key = toy_key(cfg.model, plan_run(cfg, None, hardware=False).recipe.warm_start_key(cfg.data))
    assert digest(key) == toy.key_digest, f"`{toy.command}` no longer composes the key {name} was built from"
    assert json.loads((toy.folder / RECORD).read_text()) == json.loads(json.dumps(key, default=str))
    assert {"config.json", "model.safetensors", "tokenizer.json", "warm_start.json"} <= {
        p.name for p in toy.folder.iterdir()
    }

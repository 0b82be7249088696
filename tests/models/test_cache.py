"""The model cache: a content hash written when an entry is built and checked when it is used,
nothing in it ever unpickled, and an unwritable cache is one line."""

import json
import pickle
import shutil
from pathlib import Path

import pytest

from rlrecipes.errors import StorageError, UserError
from rlrecipes.integrity import content_digest
from rlrecipes.models.cache import CONTENT_HASH, cached_folder


class Planted:
    """A pickle whose loading creates `marker`: what an attacker would put in a shared cache."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def planted_pickle(marker: Path) -> bytes:
    return pickle.dumps(Planted(marker), protocol=2)  # torch.load's own protocol


def test_the_planted_pickle_would_run_if_unpickled(tmp_path):
    """The payload the tests below plant is live: loading it with pickle creates its marker."""
    pickle.loads(planted_pickle(tmp_path / "ran")).close()
    assert (tmp_path / "ran").exists()


@pytest.fixture
def entry(tmp_path):
    """A cache entry from a builder that counts its builds (config, weights, tokenizer)."""
    import torch
    from safetensors.torch import save_file

    builds = []

    def build(folder):
        builds.append(folder)
        (folder / "config.json").write_text(json.dumps({"model_type": "toy"}))
        (folder / "tokenizer.json").write_text(json.dumps({"vocab": ["a", "b"]}))
        save_file({"w": torch.arange(64, dtype=torch.float32)}, str(folder / "model.safetensors"))

    folder = tmp_path / "cache" / "toy" / "abc"
    assert cached_folder(folder, {"k": 1}, build, log=lambda _: None) == folder
    return folder, build, builds


def test_the_content_hash_is_written_at_build_time(entry):
    folder, build, builds = entry
    recorded = (folder / CONTENT_HASH).read_text().strip()
    assert recorded == content_digest(folder, exclude=(CONTENT_HASH,))
    assert cached_folder(folder, {"k": 1}, build, log=lambda _: None) == folder and len(builds) == 1  # reused


def test_a_flipped_byte_in_the_cached_weights_is_rebuilt(entry):
    """Same length, header intact: only the hash tells the weights changed."""
    from safetensors.torch import load_file

    folder, build, builds = entry
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x40  # the last byte of the last float
    weights.write_bytes(bytes(data))
    assert load_file(str(weights))["w"][-1] != 63.0  # still loads, silently wrong
    messages: list[str] = []
    assert cached_folder(folder, {"k": 1}, build, log=messages.append) == folder
    assert len(builds) == 2 and len(messages) == 2  # the rebuild note, then where it is cached
    assert messages[0].startswith(f"rebuilding {folder}: ") and "content hash mismatch" in messages[0]
    assert "\n" not in messages[0]
    assert load_file(str(weights))["w"][-1] == 63.0


def test_an_entry_without_a_content_hash_is_rebuilt(entry):
    folder, build, builds = entry
    (folder / CONTENT_HASH).unlink()  # built before the hash existed
    messages: list[str] = []
    cached_folder(folder, {"k": 1}, build, log=messages.append)
    assert len(builds) == 2 and f"no readable {CONTENT_HASH}" in messages[0]


@pytest.mark.parametrize(
    "name", ["model.safetensors", "config.json", "tokenizer.json", "pytorch_model.bin", "training_args.bin"]
)
def test_a_pickle_planted_in_a_cache_file_is_never_run(entry, tmp_path, name):
    """Each file the cache or transformers could load (and new ones beside them): the entry is
    rebuilt, the planted file is gone, nothing ran."""
    folder, build, builds = entry
    marker = tmp_path / "pwned"
    built = (folder / name).read_bytes() if (folder / name).is_file() else None
    (folder / name).write_bytes(planted_pickle(marker))
    cached_folder(folder, {"k": 1}, build, log=lambda _: None)
    assert len(builds) == 2 and not marker.exists()
    assert ((folder / name).read_bytes() if (folder / name).is_file() else None) == built  # as built


@pytest.mark.integration
def test_a_pickle_behind_a_matching_hash_is_refused_when_loading(toy_model_dir, tmp_path):
    """Someone who can write the cache can also rewrite its hash: the weights are then loaded
    as the project always loads them (safetensors, or torch with weights_only=True), so the
    pickle is refused in one line naming the file, and nothing runs."""
    from rlrecipes.models import load_model
    from tests.conftest import compose

    folder = tmp_path / "entry"
    shutil.copytree(toy_model_dir, folder)
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "pwned"
    (folder / "pytorch_model.bin").write_bytes(planted_pickle(marker))
    (folder / CONTENT_HASH).write_text(content_digest(folder, exclude=(CONTENT_HASH,)))
    with pytest.raises(UserError, match="pytorch_model.bin holds pickled Python objects") as error:
        load_model(str(folder), compose().model)
    assert "\n" not in str(error.value) and not marker.exists()


def test_an_unwritable_cache_is_one_line(monkeypatch, unwritable_dir):
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path
    from tests.conftest import compose

    monkeypatch.setenv("RLRECIPES_CACHE", str(unwritable_dir))
    cfg = compose()
    task = load_problem_set(cfg.data).task
    with pytest.raises(StorageError, match="set RLRECIPES_CACHE .* to a writable folder") as error:
        resolve_model_path(cfg.model, task, cfg.data.synthetic, log=lambda _: None)
    assert str(error.value).startswith(f"cannot write {unwritable_dir / 'toy'}") and "\n" not in str(error.value)

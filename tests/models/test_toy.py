from pathlib import Path

import pytest

from rlrecipes.models import load_model, resolve_model_path
from rlrecipes.models.toy import _plateaued, build_tokenizer
from tests.conftest import compose


def test_character_tokenizer_round_trips_whitespace_and_pads_left():
    tok = build_tokenizer()
    text = "The answer is 12+7=19.\n ok"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert tok.decode(ids) == text
    assert tok.padding_side == "left" and tok.pad_token == "<|pad|>" and tok.eos_token == "<|eos|>"


def test_plateau_rule_needs_a_flat_window():
    assert not _plateaued([0.1, 0.3, 0.5, 0.31, 0.30], patience=4, tolerance=0.04)
    assert _plateaued([0.1, 0.3, 0.31, 0.29, 0.30, 0.32], patience=4, tolerance=0.04)
    assert not _plateaued([0.3, 0.3], patience=4, tolerance=0.04)


def test_toy_model_is_cached_by_config_and_reloads(toy_model_dir: Path):
    cfg = compose()
    assert (toy_model_dir / "model.safetensors").is_file()
    assert (toy_model_dir / "warm_start.json").is_file()
    # a second resolution is a cache hit: no log lines, same folder
    logs: list[str] = []
    from rlrecipes.data.problems import load_problem_set

    problems = load_problem_set(cfg.data)
    again = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=logs.append)
    assert Path(again) == toy_model_dir and logs == []
    model, tok = load_model(str(toy_model_dir), cfg.model)
    assert model.config.model_type == "qwen3" and tok.decode(tok("1+2")["input_ids"]) == "1+2"
    # a different config is a different model
    other = compose("model.toy.seed=1")
    key_a = Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=logs.append)).name
    assert key_a == toy_model_dir.name
    assert other.model.toy.seed != cfg.model.toy.seed


def test_explicit_name_or_path_wins_over_builder():
    cfg = compose("model.name_or_path=/some/folder")
    assert resolve_model_path(cfg.model) == "/some/folder"


def test_a_damaged_cache_entry_is_rebuilt_not_reused(tmp_path):
    """A truncated model.safetensors in the cache (a disk filled mid-write, a killed copy) would
    break every later run until found by hand; the cache notices and rebuilds it."""
    from rlrecipes.models import _cached

    builds = []

    def build(folder):
        import torch
        from safetensors.torch import save_file

        builds.append(folder)
        (folder / "config.json").write_text("{}")
        save_file({"w": torch.zeros(64)}, str(folder / "model.safetensors"))

    folder = tmp_path / "entry"
    assert _cached(folder, {"k": 1}, build, log=lambda _: None) == folder
    assert _cached(folder, {"k": 1}, build, log=lambda _: None) == folder and len(builds) == 1  # reused
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])  # truncated
    messages = []
    _cached(folder, {"k": 1}, build, log=messages.append)
    assert len(builds) == 2 and "weights are damaged" in messages[0]
    from safetensors.torch import load_file

    assert load_file(str(weights))["w"].shape == (64,)


def test_a_damaged_model_folder_is_one_line(toy_model_dir, tmp_path):
    import shutil

    from rlrecipes.errors import UserError
    from rlrecipes.models import load_model
    from tests.conftest import compose

    folder = tmp_path / "model"
    shutil.copytree(toy_model_dir, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(UserError, match="a .safetensors file there is damaged"):
        load_model(str(folder), compose().model)

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlrecipes.data.synthetic import make_task
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import UserError
from rlrecipes.models import load_model, resolve_model_path
from rlrecipes.models.toy import _plateaued, build_tokenizer, dev_decode_tokens, warm_start_split
from tests.conftest import compose


def test_character_tokenizer_round_trips_whitespace_and_pads_left():
    tok = build_tokenizer()
    text = "The answer is 12+7=19.\n ok"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)
    assert tok.decode(ids) == text
    assert tok.padding_side == "left" and tok.pad_token == "<|pad|>" and tok.eos_token == "<|eos|>"


def test_the_dev_check_decodes_a_whole_answer_whatever_the_setting():
    # One token per character plus the end token: "Answer: 5" -> 10; a Countdown equation
    # needs more than the default 12, so the dev check would score every answer 0
    tokenizer = build_tokenizer()
    arithmetic = make_task(compose("data.synthetic.num_train=40", "data.synthetic.num_eval=4").data.synthetic)
    assert dev_decode_tokens(arithmetic, [{**arithmetic.train[0], "answer": "5"}], tokenizer, 12) == 12
    countdown = make_task(compose("data=countdown").data.synthetic)
    longest = max(len(countdown.solution(it)) for it in countdown.train[:50])
    assert longest + 1 > 12
    assert dev_decode_tokens(countdown, countdown.train[:50], tokenizer, 12) == longest + 1


def test_the_warm_start_imitates_only_prompts_within_its_token_bounds():
    # the character tokenizer: one token per character, so the chat-rendered prompt of a
    # k-character problem is k tokens longer than that of the empty problem
    tok = build_tokenizer()
    overhead = len(tok(render_prompt("", "chat", tok), add_special_tokens=False)["input_ids"])
    problems = ["ab", "abcdef", "a", "abcd", "abc", "abcdefgh"]  # 2, 6, 1, 4, 3, 8 characters
    task = SimpleNamespace(train=[{"problem": p} for p in problems])

    def split(low, high, dev_size=1):
        cfg = SimpleNamespace(sft_min_prompt_tokens=low, sft_max_prompt_tokens=high, sft_dev_size=dev_size)
        dev, items = warm_start_split(task, tok, cfg)
        return [it["problem"] for it in dev], [it["problem"] for it in items]

    # at most 4 characters, in order, the last one held back for the dev check
    assert split(None, overhead + 4) == (["abc"], ["ab", "a", "abcd"])
    assert split(overhead + 3, None) == (["abcdefgh"], ["abcdef", "abcd", "abc"])  # at least 3
    assert split(overhead + 2, overhead + 4) == (["abc"], ["ab", "abcd"])  # both bounds inclusive
    assert split(None, None) == (["abcdefgh"], problems[:-1])
    with pytest.raises(UserError, match=r"sft_max_prompt_tokens=.*: 1 of the task's 6 .*sft_dev_size=1"):
        split(None, overhead + 1)


def test_plateau_rule_needs_a_flat_window():
    # index 0 is the untrained model's dev accuracy, then one value per evaluation
    assert not _plateaued([0.0, 0.1, 0.3, 0.5, 0.31, 0.30], patience=4, tolerance=0.04)
    assert _plateaued([0.0, 0.1, 0.3, 0.31, 0.29, 0.30, 0.32], patience=4, tolerance=0.04)
    assert not _plateaued([0.0, 0.3, 0.3], patience=4, tolerance=0.04)


def test_plateau_rule_ignores_the_flat_start_before_anything_is_learned():
    # the curve of a default build that version 1 of the rule stopped at step 500
    before_learning = [0.0, 0.0025, 0.0025, 0.0, 0.0025, 0.0225]
    assert not _plateaued(before_learning, patience=4, tolerance=0.04)
    # the same model once it has learned the format and converged on the teacher's flaw
    assert _plateaued([*before_learning, 0.21, 0.28, 0.29, 0.27, 0.30, 0.29], patience=4, tolerance=0.04)
    # a flat window only 0.04 above the untrained model is not yet a rise
    assert not _plateaued([0.0, 0.04, 0.05, 0.06, 0.05, 0.04], patience=4, tolerance=0.04)
    # the rise is measured from the untrained model, not from the first evaluation
    assert _plateaued([0.0, 0.30, 0.30, 0.31, 0.30, 0.29], patience=4, tolerance=0.04)


@pytest.mark.integration
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


@pytest.mark.integration
def test_a_different_toy_config_builds_a_different_model(toy_model_dir: Path, tmp_path: Path):
    from safetensors.torch import load_file

    from rlrecipes.data.problems import load_problem_set

    other = compose("model.toy.seed=1", "model.toy.sft_max_steps=2", "model.toy.sft_eval_every=2")
    problems = load_problem_set(other.data)
    logs: list[str] = []
    folder = Path(resolve_model_path(other.model, problems.task, other.data.synthetic, str(tmp_path), logs.append))
    assert folder.parent == tmp_path / "toy" and folder.name != toy_model_dir.name
    assert any("building toy model" in line for line in logs)  # built here, not found in a cache
    mine, theirs = load_file(str(folder / "model.safetensors")), load_file(str(toy_model_dir / "model.safetensors"))
    assert mine.keys() == theirs.keys()
    assert not all(mine[k].equal(theirs[k]) for k in mine)
    assert json.loads((folder / "warm_start.json").read_text())["steps"] == 2


def test_explicit_name_or_path_wins_over_builder():
    cfg = compose("model.name_or_path=/some/folder")
    assert resolve_model_path(cfg.model) == "/some/folder"


def test_a_damaged_cache_entry_is_rebuilt_not_reused(tmp_path):
    """A truncated model.safetensors in the cache (a disk filled mid-write, a killed copy) would
    break every later run until found by hand; the cache notices and rebuilds it."""
    from rlrecipes.models.cache import cached_folder

    builds = []

    def build(folder):
        import torch
        from safetensors.torch import save_file

        builds.append(folder)
        (folder / "config.json").write_text("{}")
        save_file({"w": torch.zeros(64)}, str(folder / "model.safetensors"))

    folder = tmp_path / "entry"
    assert cached_folder(folder, {"k": 1}, build, log=lambda _: None) == folder
    assert cached_folder(folder, {"k": 1}, build, log=lambda _: None) == folder and len(builds) == 1  # reused
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])  # truncated
    messages = []
    cached_folder(folder, {"k": 1}, build, log=messages.append)
    assert len(builds) == 2 and "content hash mismatch" in messages[0]
    from safetensors.torch import load_file

    assert load_file(str(weights))["w"].shape == (64,)


@pytest.mark.integration
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

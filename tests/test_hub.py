"""Offline: the hub is asked once whether it answers; without it the Hugging Face libraries go
offline (no retry loop) and a missing model or benchmark is one line naming what to do."""

import os
import socket
import subprocess
import sys

import pytest

from rlrecipes import hub
from rlrecipes.errors import DataError, UserError


@pytest.fixture
def fresh_hub(monkeypatch):
    """A process that has not asked yet, with the user's offline settings unset; whatever a
    test switches on is switched back."""
    import huggingface_hub.constants

    monkeypatch.setattr(hub, "_probed", {})
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", huggingface_hub.constants.HF_HUB_OFFLINE)
    yield
    for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.pop(key, None)


def refused(calls):
    def connect(address, timeout=None):
        calls.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    return connect


def test_no_network_is_found_once_and_turns_offline_mode_on(fresh_hub, monkeypatch):
    import huggingface_hub.constants

    calls, said = [], []
    monkeypatch.setattr(socket, "create_connection", refused(calls))
    assert hub.offline_reason(said.append) == "no network: huggingface.co:443 did not answer (Connection refused)"
    assert hub.offline_reason(said.append) == hub.offline_reason()  # asked once per process
    assert calls == [("huggingface.co", 443)]
    assert said == [
        "no network: huggingface.co:443 did not answer (Connection refused); "
        "using the local Hugging Face cache only (HF_HUB_OFFLINE=1)"
    ]
    assert huggingface_hub.constants.HF_HUB_OFFLINE is True and os.environ["HF_HUB_OFFLINE"] == "1"


def test_hf_hub_offline_set_by_the_user_is_respected_without_a_probe(fresh_hub, monkeypatch):
    calls = []
    monkeypatch.setattr(socket, "create_connection", refused(calls))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.offline_reason() == "HF_HUB_OFFLINE=1" and calls == []


def test_a_hub_that_answers_changes_nothing(fresh_hub, monkeypatch):
    class Open:
        def close(self):
            pass

    monkeypatch.setenv("HF_ENDPOINT", "http://hub.example:8080")
    calls = []
    monkeypatch.setattr(socket, "create_connection", lambda address, timeout=None: calls.append(address) or Open())
    assert hub.offline_reason() is None and calls == [("hub.example", 8080)]
    assert "HF_HUB_OFFLINE" not in os.environ


def test_a_model_missing_offline_is_one_line_and_a_folder_is_fine(fresh_hub, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.check_model_available(str(tmp_path))  # a local folder needs no hub
    with pytest.raises(UserError) as err:
        hub.check_model_available("nobody/no-such-model-x")
    assert str(err.value) == (
        "model.name_or_path=nobody/no-such-model-x is not in the local Hugging Face cache and the hub cannot be "
        "reached (HF_HUB_OFFLINE=1): download it where there is network (`hf download nobody/no-such-model-x`) "
        "or pass a local model folder"
    )


@pytest.mark.parametrize("name", ["math500", "aime24", "gsm8k", "minerva_math", "olympiadbench"])
def test_every_data_dir_hint_names_the_files_and_fields_the_benchmark_reads(name, tmp_path):
    from rlrecipes.eval.benchmarks import BENCHMARKS, find_local_file

    spec = BENCHMARKS[name]
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "b.jsonl").write_text("")  # two candidates: no guess
    with pytest.raises(DataError) as err:
        find_local_file(spec, tmp_path)
    message = str(err.value)
    for rel in spec.local_files:
        assert f"DIR/{rel}" in message, rel
    assert "problem|question" in message and f"answer in {spec.gold_fields[0]}" in message
    assert "files there: a.jsonl, b.jsonl" in message


def test_a_benchmark_missing_offline_says_so_and_how_to_pass_it(fresh_hub, monkeypatch):
    import datasets

    from rlrecipes.eval.benchmarks import load_benchmark

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("offline")))
    with pytest.raises(DataError) as err:
        load_benchmark("aime24")
    message = str(err.value)
    assert message.startswith(
        "could not load benchmark 'aime24' from the hub (HuggingFaceH4/aime_2024, split train): not in the "
        "local cache and the hub cannot be reached (HF_HUB_OFFLINE=1); on a machine with network, "
        "`rlrecipes save-benchmark aime24 DIR` saves it, then pass data_dir=DIR here (or data_dir=DIR with "
        "DIR/aime24/One-Shot-RLVR/test.jsonl or "
    )


def test_judge_pairs_writes_the_j1_toys_held_out_pairs(tmp_path, capsys):
    import json

    from rlrecipes.compose import compose_config
    from rlrecipes.recipes.j1 import J1
    from tests.conftest import cli

    out = tmp_path / "heldout.jsonl"
    code, text = cli(capsys, "judge-pairs", "--data", "toy", "--out", str(out))
    assert code == 0 and "300 held-out pairs of the J1 toy" in text, text
    pairs = [json.loads(line) for line in out.read_text().splitlines()]
    cfg = compose_config("train", ["experiment=j1_toy"])
    rows = J1(cfg.recipe).problem_set(cfg.data).eval  # what the run measures held-out accuracy on
    assert len(rows) == 2 * len(pairs) == 600  # both orders of each of the 300 pairs
    assert all(
        p["chosen"] in rows[2 * i]["problem"] and p["prompt"] in rows[2 * i]["problem"] for i, p in enumerate(pairs)
    )
    for p in pairs:  # chosen is the sum, rejected a wrong one (hand-checkable: "13+54" -> 67)
        a, b = map(int, p["prompt"].split("+"))
        assert p["chosen"] == f"Answer: {a + b}" and p["rejected"] != p["chosen"]


@pytest.mark.integration
def test_eval_without_network_fails_at_once_in_one_line(tmp_path):
    from tests.conftest import one_error_line

    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env |= {"HF_ENDPOINT": "http://127.0.0.1:9", "COLUMNS": "80"}  # nothing listens on port 9
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "eval", "model.name_or_path=nobody/no-such-model-x", "limit=1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 2 and "Retrying" not in text, text
    assert "not in the local Hugging Face cache and the hub cannot be reached (no network: 127.0.0.1:9" in (
        one_error_line(out.stdout)
    )

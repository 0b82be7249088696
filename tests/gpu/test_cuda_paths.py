"""The CUDA paths, for the day a GPU is lent: skipped without CUDA; `make gpu-check` runs them
(scripts/gpu_check.sh) and writes one JSON result.

On one GPU (each a tiny run of the TINY toy in the shape vLLM serves, model=toy_vllm, through
the CLI as users run it):

- bf16 training (`trainer.use_cpu=false trainer.bf16=true`): every step's loss and gradient
  norm finite, a gradient on the steps with a mixed group, and the weights moved;
- LoRA on the GPU (`model.lora.r=4`): the adapter is saved and its B matrices, which peft
  starts at zero, are no longer zero;
- transformers generation on CUDA (the model on the GPU, greedy twice gives the same text),
  and the held-out callback during training (`trainer.eval.every=1`);
- resume: a run killed after step 3 resumes from checkpoint-2 and finishes steps 3-4 once;
- `rlrecipes eval generation.backend=hf`: the backend the eval recorded in summary.json.

Needing vLLM (skipped with the reason where `vllm` is not installed):
- vLLM colocated rollouts (`rollout=vllm`): TRL's own weight sync (the CUDA path does not
  use engine/vllm_sync.py's CPU reload), with the vLLM/trainer log-prob gap logged and
  bounded (bf16 rounding, not a stale engine);
- `rlrecipes eval` with `generation.backend=auto` resolving to vLLM on a GPU.

Needing 2 GPUs:
- vLLM server rollouts (`rollout=vllm_server`): `trl vllm-serve` on GPU 1 (127.0.0.1 only,
  always stopped), training on GPU 0, TRL's NCCL weight sync to the server every step;
- 2-GPU DDP (`accelerate launch --num_processes 2` with the packaged ddp config): one
  run directory and one summary, the world size it really got.

The training runs use tests/helpers/multiprocess_entry.py's `scripted_groups` reward: it scores a
completion from its prompt and its place in the group, never from its text, so which groups
are mixed (and so have a gradient) does not depend on what the model samples. A GPU run is
not bit-reproducible (cuBLAS reductions), so resume here checks the steps, not equal losses
(tests/test_resume.py checks those on the CPU).

Not covered: ZeRO-3/FSDP with vLLM, multi-node, QLoRA (bitsandbytes).
Each subprocess is bounded by RLRECIPES_GPU_TEST_TIMEOUT_S (default 600 s).
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY, compose, stop_process_group
from tests.helpers.processes import free_port

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "tests" / "helpers" / "multiprocess_entry.py")  # the CLI with the scripted reward registered
TIMEOUT_S = float(os.environ.get("RLRECIPES_GPU_TEST_TIMEOUT_S", "600"))
GPU = ["model=toy_vllm", "trainer.use_cpu=false", "trainer.bf16=true"]
SCRIPTED = ["recipe.rewards=[{name: scripted_groups, weight: 1.0}]"]
NO_EVAL = ["trainer.eval.before=false", "trainer.eval.after=false"]
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")


def train(*overrides, cwd, env=None, launcher=(sys.executable, "-m", "rlrecipes.cli")):
    return subprocess.run(
        [*launcher, "train", *TINY, *GPU, *overrides],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=TIMEOUT_S,
        env={**with_root_on_path(), **(env or {})},
    )


def with_root_on_path() -> dict[str, str]:
    """os.environ with this checkout first on PYTHONPATH (the GPU machine has rlrecipes uninstalled)."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def scripted_train(*overrides, cwd, fault=None):
    """`rlrecipes train` with the scripted reward (and a fault injected, see tests/helpers/multiprocess_entry.py)."""
    env = {"RLRECIPES_TEST_FAULT": fault} if fault else {}
    return train(*SCRIPTED, *overrides, cwd=cwd, env=env, launcher=(sys.executable, ENTRY))


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def tail(out: subprocess.CompletedProcess) -> str:
    return out.stdout[-3000:] + out.stderr[-3000:]


def test_bf16_training_on_gpu_is_finite_and_moves_the_weights(tmp_path):
    from safetensors.torch import load_file

    run = tmp_path / "r"
    out = scripted_train(*NO_EVAL, "trainer.max_steps=2", f"run_dir={run}", cwd=tmp_path)
    assert out.returncode == 0, tail(out)
    versions = json.loads((run / "versions.json").read_text())
    assert versions["gpu"] and versions["cuda"]
    rows = metrics(run)
    assert [r["step"] for r in rows] == [1, 2]
    assert all(math.isfinite(r["loss"]) and math.isfinite(r["grad_norm"]) for r in rows), rows
    mixed = [r for r in rows if r["frac_groups_zero_std"] < 1]  # a group with one right answer
    assert mixed and all(r["grad_norm"] > 0 for r in mixed), rows
    base = load_file(Path(json.loads((run / "summary.json").read_text())["model"]) / "model.safetensors")
    trained = load_file(run / "model" / "model.safetensors")
    assert trained.keys() == base.keys()
    moved = max((trained[k].float() - base[k].float()).abs().max().item() for k in base)
    assert moved > 0  # an optimizer step on a nonzero gradient changed the weights


def test_lora_on_gpu_trains_the_adapter(tmp_path):
    from safetensors.torch import load_file

    run = tmp_path / "lora"
    out = scripted_train(*NO_EVAL, "model.lora.r=4", "trainer.max_steps=2", f"run_dir={run}", cwd=tmp_path)
    assert out.returncode == 0, tail(out)
    assert json.loads((run / "summary.json").read_text())["saved_model"]["adapter"] is True
    adapter = load_file(run / "model" / "adapter_model.safetensors")
    lora_b = {k: v for k, v in adapter.items() if "lora_B" in k}
    assert lora_b, sorted(adapter)
    # peft starts every B at zero: a nonzero one was trained on the GPU
    assert any(v.abs().max().item() > 0 for v in lora_b.values())


def test_transformers_generation_runs_on_cuda():
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.generation import Sampling, hf_generate
    from rlrecipes.models import load_model, resolve_model_path

    cfg = compose("model=toy_vllm")
    problems = load_problem_set(cfg.data)
    path = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None)
    model, tokenizer = load_model(path, cfg.model, device="cuda")
    assert next(model.parameters()).device.type == "cuda"
    prompts = [item["problem"] for item in problems.eval[:8]]
    first = hf_generate(model, tokenizer, prompts, Sampling(max_new_tokens=16), seed=0)
    again = hf_generate(model, tokenizer, prompts, Sampling(max_new_tokens=16), seed=0)
    assert len(first) == 8 and all(len(c) == 1 for c in first)
    assert [c[0].text for c in first] == [c[0].text for c in again]  # greedy: the same text both times


def test_heldout_callback_on_gpu(tmp_path):
    """A scripted policy (tests/helpers/scripted_model.py) answers 95 to every problem, in bf16 on
    the GPU too (its logit margin, 1000, is exact in bf16 and two small steps do not move it): right
    on 3 of the 64 held-out problems (tests/test_train_multiprocess.py), before, after and at
    every step."""
    from tests.helpers.scripted_model import answering, scripted_model

    model = scripted_model(tmp_path / "model", answering("95"))
    run = tmp_path / "h"
    settings = [f"model.name_or_path={model}", "trainer.eval.every=1", "trainer.max_steps=2", f"run_dir={run}"]
    out = scripted_train(*settings, cwd=tmp_path)
    assert out.returncode == 0, tail(out)
    rows = metrics(run)
    assert [r["step"] for r in rows] == [1, 2]
    assert [r["heldout_accuracy"] for r in rows] == [3 / 64, 3 / 64], rows  # measured after every step
    summary = json.loads((run / "summary.json").read_text())
    assert summary["num_heldout_problems"] == 64
    assert (summary["accuracy_before"], summary["accuracy_after"]) == (3 / 64, 3 / 64), summary


def test_killed_gpu_run_resumes_from_its_checkpoint(tmp_path):
    run = tmp_path / "k"
    settings = [*NO_EVAL, "trainer.max_steps=4", "trainer.checkpoints.every=2", f"run_dir={run}"]
    died = scripted_train(*settings, cwd=tmp_path, fault="kill_after_step:3")
    assert died.returncode == -9, tail(died)
    resumed = scripted_train(*settings, "resume=true", cwd=tmp_path)
    assert resumed.returncode == 0, tail(resumed)
    assert "resuming from" in resumed.stdout and "(step 2)" in resumed.stdout
    rows = metrics(run)
    assert [r["step"] for r in rows] == [1, 2, 3, 4]  # step 3 redone once, none skipped
    assert all(math.isfinite(r["loss"]) for r in rows)
    assert json.loads((run / "summary.json").read_text())["steps"] == 4


def eval_on_gpu(run: Path, *overrides: str) -> subprocess.CompletedProcess:
    eval_tiny = [o for o in TINY if not o.startswith("trainer.")]
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "eval", *eval_tiny, "model=toy_vllm", "progress=false", *overrides]
        + [f"run_dir={run}"],
        capture_output=True,
        text=True,
        cwd=run.parent,
        timeout=TIMEOUT_S,
        env=with_root_on_path(),
    )


def test_eval_with_transformers_on_gpu_records_its_backend(tmp_path):
    run = tmp_path / "e"
    out = eval_on_gpu(run, "generation.backend=hf")
    assert out.returncode == 0, tail(out)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["generation_backend"] == "hf"
    assert len((run / "samples.jsonl").read_text().splitlines()) == 64  # every held-out problem answered


def test_eval_auto_backend_is_vllm_on_gpu(tmp_path):
    pytest.importorskip("vllm")
    run = tmp_path / "e"
    out = eval_on_gpu(run, "generation.vllm_gpu_memory_utilization=0.2")
    assert out.returncode == 0, tail(out)
    assert json.loads((run / "summary.json").read_text())["generation_backend"] == "vllm"  # what auto chose


def test_vllm_colocate_rollouts_follow_the_trained_weights(tmp_path):
    pytest.importorskip("vllm")
    run = tmp_path / "v"
    out = train(
        "rollout=vllm",
        "rollout.vllm_gpu_memory_utilization=0.2",
        "recipe=spurious",
        "reward=random",
        "trainer.max_steps=3",
        "trainer.learning_rate=1e-3",
        f"run_dir={run}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, tail(out)
    steps = [s for s in metrics(run) if "vllm/logprob_gap" in s]
    assert len(steps) == 3
    # bf16 on both sides: rounding differences of ~1e-2; a stale engine is far above
    assert all(s["vllm/logprob_gap"] < 0.1 for s in steps), steps


@two_gpus
def test_vllm_server_rollouts_with_nccl_weight_sync(tmp_path):
    pytest.importorskip("vllm")
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose_config("train", [*TINY, *GPU])
    model = resolve_model_path(cfg.model, load_problem_set(cfg.data).task, cfg.data.synthetic, log=lambda _: None)
    port, log = free_port(), (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [
            "trl",
            "vllm-serve",
            "--model",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--gpu_memory_utilization",
            "0.3",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "1"},
        start_new_session=True,
    )
    try:
        run = tmp_path / "s"
        out = train(
            "rollout=vllm_server",
            "rollout.vllm_server_host=127.0.0.1",
            f"rollout.vllm_server_port={port}",
            "recipe=spurious",
            "reward=random",
            "trainer.max_steps=3",
            "trainer.learning_rate=1e-3",
            f"run_dir={run}",
            cwd=tmp_path,
            env={"CUDA_VISIBLE_DEVICES": "0"},
        )
        assert out.returncode == 0, tail(out) + (tmp_path / "server.log").read_text()[-3000:]
        steps = [s for s in metrics(run) if "vllm/logprob_gap" in s]
        assert len(steps) == 3 and all(s["vllm/logprob_gap"] < 0.1 for s in steps), steps
    finally:
        stop_process_group(server, 30)
        log.close()


@two_gpus
def test_two_gpu_ddp_run(tmp_path):
    from importlib.resources import files

    ddp = files("rlrecipes") / "launch" / "ddp.yaml"
    run = tmp_path / "ddp"
    out = train(
        f"run_dir={run}",
        cwd=tmp_path,
        launcher=("accelerate", "launch", "--config_file", str(ddp), "--num_processes", "2", "-m", "rlrecipes.cli"),
    )
    assert out.returncode == 0, tail(out)
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["ddp"]  # one run directory
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["world_size"] == 2  # the launch really gave 2 processes

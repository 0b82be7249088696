"""The CUDA paths, for the day a GPU is lent: one script, skipped without CUDA.

What it covers (each a tiny run of the TINY toy in the shape vLLM serves, model=toy_vllm,
through the CLI as users run it):

- bf16 training on one GPU (`trainer.use_cpu=false trainer.bf16=true`);
- vLLM colocated rollouts (`rollout=vllm`): TRL's own weight sync (the CUDA path does not
  use engine/vllm_sync.py's CPU reload), with the vLLM/trainer log-prob gap logged and
  bounded (bf16 rounding, not a stale engine);
- vLLM server rollouts (`rollout=vllm_server`): `trl vllm-serve` on GPU 1 (127.0.0.1 only,
  always stopped), training on GPU 0, TRL's NCCL weight sync to the server every step;
  needs 2 GPUs;
- 2-GPU DDP (`accelerate launch --num_processes 2` with the packaged ddp config): one
  run directory and one summary, the world size it really got; needs 2 GPUs;
- `rlrecipes eval` with `generation.backend=auto` resolving to vLLM on a GPU.

Not covered: ZeRO-3/FSDP with vLLM, multi-node, QLoRA (bitsandbytes).
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TINY, stop_process_group

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

GPU = ["model=toy_vllm", "trainer.use_cpu=false", "trainer.bf16=true"]
two_gpus = pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs")


def train(*overrides, cwd, env=None, launcher=(sys.executable, "-m", "rlrecipes.cli")):
    return subprocess.run(
        [*launcher, "train", *TINY, *GPU, *overrides],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=900,
        env={**os.environ, **(env or {})},
    )


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_bf16_training_on_gpu(tmp_path):
    out = train(f"run_dir={tmp_path / 'r'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    versions = json.loads((tmp_path / "r" / "versions.json").read_text())
    assert versions["gpu"]


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
    assert out.returncode == 0, out.stdout + out.stderr
    steps = [s for s in metrics(run) if "vllm/logprob_gap" in s]
    assert len(steps) == 3
    # bf16 on both sides: rounding differences of ~1e-2; a stale engine is far above
    assert all(s["vllm/logprob_gap"] < 0.1 for s in steps), steps


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@two_gpus
def test_vllm_server_rollouts_with_nccl_weight_sync(tmp_path):
    pytest.importorskip("vllm")
    from rlrecipes.config import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose_config("train", [*TINY, *GPU])
    model = resolve_model_path(cfg.model, load_problem_set(cfg.data).task, cfg.data.synthetic, log=lambda _: None)
    port, log = _free_port(), (tmp_path / "server.log").open("w")
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
        assert out.returncode == 0, (
            out.stdout[-3000:] + out.stderr[-3000:] + (tmp_path / "server.log").read_text()[-3000:]
        )
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
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == ["ddp"]  # one run directory
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["world_size"] == 2  # the launch really gave 2 processes


def test_eval_auto_backend_is_vllm_on_gpu(tmp_path):
    pytest.importorskip("vllm")
    from rlrecipes.eval.backends import resolve_backend

    run = tmp_path / "e"
    eval_tiny = [o for o in TINY if not o.startswith("trainer.")]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rlrecipes.cli",
            "eval",
            *eval_tiny,
            "model=toy_vllm",
            "generation.vllm_gpu_memory_utilization=0.2",
            "progress=false",
            f"run_dir={run}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    model = json.loads((run / "summary.json").read_text())["model"]
    assert resolve_backend("auto", model) == "vllm"

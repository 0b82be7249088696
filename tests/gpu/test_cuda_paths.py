"""CUDA paths (bf16 training, vLLM rollouts). Skipped on machines without a GPU."""

import json
import subprocess
import sys

import pytest

from tests.conftest import TINY

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def train(*overrides, cwd):
    return subprocess.run([sys.executable, "-m", "rlrecipes.cli", "train", *TINY, *overrides],
                          capture_output=True, text=True, cwd=cwd, timeout=900)


def test_bf16_training_on_gpu(toy_model_dir, tmp_path):
    out = train("trainer.use_cpu=false", "trainer.bf16=true", f"run_dir={tmp_path / 'r'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    versions = json.loads((tmp_path / "r" / "versions.json").read_text())
    assert versions["gpu"]


def test_vllm_colocate_rollouts(toy_model_dir, tmp_path):
    pytest.importorskip("vllm")
    out = train("trainer.use_cpu=false", "trainer.bf16=true", "rollout=vllm", "rollout.vllm_gpu_memory_utilization=0.2",
                f"run_dir={tmp_path / 'v'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr

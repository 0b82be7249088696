"""`final_eval=[...]`: the trained model evaluated once, in a process of its own.

A separate process starts from a clean slate: its vLLM engine does not share the training's
GPU memory, nor inherit the training's torch.distributed world (which a second in-process vLLM
engine would try to join). The training's own engine and model are released first.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from omegaconf import DictConfig

from rlrecipes.rundir import write_json, write_manifest

if TYPE_CHECKING:  # the job calls this module: the type only, no import cycle
    from rlrecipes.training.job import TrainingJob

Log = Callable[[str], None]
# the launcher's distributed variables, which the child process must not inherit
LAUNCHER_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
)


def evaluate_final_model(job: TrainingJob, trainer: Any, started: float) -> None:
    """Evaluate the saved model (`job.plan.final_eval`) in a child process; its headline
    metrics go into the summary."""
    trainer.accelerator.wait_for_everyone()
    _release_generation_memory(trainer)
    if job.is_main:
        out_dir = job.run_dir / "eval"
        try:
            job.summary["final_eval"] = _run_final_eval(job.plan.final_eval, out_dir, job.log)
        except Exception as exc:
            job.summary["final_eval_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            write_json(job.run_dir / "summary.json", job.summary)
            raise
        job.summary["wall_seconds"] = round(time.time() - started, 2)
        write_json(job.run_dir / "summary.json", job.summary)
    trainer.accelerator.wait_for_everyone()


def _release_generation_memory(trainer: Any) -> None:
    import torch

    generation = getattr(trainer, "vllm_generation", None)
    if generation is not None and getattr(generation, "llm", None) is not None:
        generation.llm = None  # TRL's colocated engine: its KV cache is most of a GPU's memory
    trainer.model = trainer.model_wrapped = None
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _run_final_eval(eval_cfg: DictConfig, out_dir: Path, log: Log) -> dict[str, Any]:
    """Run the evaluation of `eval_cfg` (written to out_dir/config.yaml) in a child process;
    returns each benchmark's headline metric."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(out_dir, eval_cfg)
    log(f"final evaluation of the trained model -> {out_dir}")
    done = subprocess.run([sys.executable, "-m", "rlrecipes.eval.final", str(out_dir)], env=_single_process_env())
    if done.returncode != 0:
        raise RuntimeError(f"the final evaluation exited with status {done.returncode} (its output is above)")
    return json.loads((out_dir / "headline.json").read_text())


def _single_process_env() -> dict[str, str]:
    """This process's environment without the launcher's distributed variables, on this rank's GPU."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in LAUNCHER_VARIABLES and not k.startswith(("ACCELERATE_", "TORCHELASTIC_"))
    }
    local_rank = os.environ.get("LOCAL_RANK")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if local_rank is not None and visible:
        devices = visible.split(",")
        env["CUDA_VISIBLE_DEVICES"] = devices[int(local_rank) % len(devices)]
    elif local_rank is not None:
        env["CUDA_VISIBLE_DEVICES"] = local_rank
    return env

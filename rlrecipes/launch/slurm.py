"""Slurm jobs from a Hydra sweep (hydra/launcher=slurm_gpu|slurm_cpu, Hydra's submitit launcher).

- **Ranks.** A multi-GPU job runs one Slurm task per GPU, and Hydra's launcher runs the
  training job in every task. Given the torch.distributed variables that `accelerate
  launch` (or torchrun) would set, taken from Slurm's (SLURM_PROCID, SLURM_LOCALID,
  SLURM_NTASKS, the node list), the tasks form one data-parallel run, as processes
  started by `accelerate launch` do.
- **The time limit.** submitit asks Slurm for SIGUSR2 `signal_delay_s` before the limit,
  and its handler raises in the main task at once (no requeue is configured): training
  would die without a checkpoint. Here SIGUSR2 becomes the SIGTERM that training already
  answers with a checkpoint at the next rollout boundary (engine/checkpoints.py), in
  every task, so all ranks stop together.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from hydra.experimental.callback import Callback


def _usr2_as_term(signum: int, frame: Any) -> None:
    os.kill(os.getpid(), signal.SIGTERM)


class SlurmRanks(Callback):
    """In a submitit Slurm job: SIGUSR2 handled as SIGTERM and, with several tasks, RANK,
    LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT exported. Nothing elsewhere (a
    local run, accelerate launch inside a job)."""

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        if os.environ.get("SUBMITIT_EXECUTOR") != "slurm":
            return
        signal.signal(signal.SIGUSR2, _usr2_as_term)
        if int(os.environ.get("SLURM_NTASKS", "1")) < 2 or "RANK" in os.environ:
            return  # one task, or started by accelerate launch / torchrun inside the job
        import submitit

        # every GPU stays visible: accelerate picks cuda:LOCAL_RANK itself
        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)

"""Multi-GPU Slurm jobs from a Hydra sweep: one Slurm task per GPU, each one rank.

Hydra's submitit launcher runs the training job in every task of a Slurm job. Given
the torch.distributed variables that `accelerate launch` (or torchrun) would set, the
tasks form one data-parallel run, as processes started by `accelerate launch` do; the
variables come from Slurm's (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, the node list).
"""

from __future__ import annotations

import os
from typing import Any

from hydra.experimental.callback import Callback


class SlurmRanks(Callback):
    """Export RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in a multi-task
    submitit job; nothing elsewhere (a local run, accelerate launch, a one-task job)."""

    def on_job_start(self, config: Any, **kwargs: Any) -> None:
        if os.environ.get("SUBMITIT_EXECUTOR") != "slurm" or int(os.environ.get("SLURM_NTASKS", "1")) < 2:
            return
        if "RANK" in os.environ:  # started by accelerate launch / torchrun inside the job
            return
        import submitit

        # every GPU stays visible: accelerate picks cuda:LOCAL_RANK itself
        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False)

"""Hydra launchers shipped in conf/hydra/launcher: the Slurm configs compose and render an
sbatch script on a machine without Slurm, and a multi-task Slurm job's tasks become ranks."""

import os

import pytest
from omegaconf import OmegaConf

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")


def launcher_config(*overrides: str) -> dict:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    from rlrecipes.compose.compose import conf_dir
    from rlrecipes.compose.store import register_configs

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose("train", overrides=list(overrides), return_hydra_config=True)
            HydraConfig.instance().set_config(cfg)  # ${hydra.job.name} etc. resolve as in a job
            return OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    finally:
        GlobalHydra.instance().clear()


def render(launcher: dict, folder, monkeypatch) -> str:
    """The sbatch script submitit would submit, with the launcher plugin's mapping of keys
    (hydra_submitit_launcher.submitit_launcher.BaseSubmititLauncher.launch)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    # the executor refuses to exist where `srun` is missing; rendering needs no Slurm
    monkeypatch.setattr(submitit.SlurmExecutor, "affinity", staticmethod(lambda: 1))

    params = {k: v for k, v in launcher.items() if k not in ("_target_", "submitit_folder", "max_num_timeout")}
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    executor = submitit.AutoExecutor(folder=str(folder), cluster="slurm")
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
    return executor._executor._make_submission_file_text("python -u -m submitit.core._submit FOLDER", "UID")


def test_gpu_launcher_renders_partition_gpus_time_account_setup_and_one_task_per_gpu(tmp_path, monkeypatch):
    launcher = launcher_config(
        "hydra/launcher=slurm_gpu",
        "hydra.launcher.partition=a100",
        "hydra.launcher.account=proj42",
        "hydra.launcher.gpus_per_node=4",
        "hydra.launcher.nodes=2",
        "hydra.launcher.timeout_min=600",
        "hydra.launcher.setup=[module load cuda/12.4,source .venv/bin/activate]",
    )
    assert launcher["_target_"].endswith("SlurmLauncher")
    script = render(launcher, tmp_path, monkeypatch)
    for line in (
        "#SBATCH --partition=a100",
        "#SBATCH --account=proj42",
        "#SBATCH --gpus-per-node=4",
        "#SBATCH --nodes=2",
        "#SBATCH --ntasks-per-node=4",
        "#SBATCH --time=600",
        "module load cuda/12.4",
        "source .venv/bin/activate",
    ):
        assert line in script, script
    assert "srun" in script and "submitit.core._submit" in script  # every task runs the Hydra job


def test_cpu_launcher_asks_for_no_gpu(tmp_path, monkeypatch):
    script = render(launcher_config("hydra/launcher=slurm_cpu", "hydra.launcher.partition=cpu"), tmp_path, monkeypatch)
    assert "#SBATCH --partition=cpu" in script and "#SBATCH --cpus-per-task=4" in script
    assert "gpu" not in script.replace("--partition=cpu", "")


def test_joblib_launcher_composes_for_parallel_cpu_sweeps():
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    launcher = launcher_config("hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert launcher["_target_"].endswith("JoblibLauncher") and launcher["n_jobs"] == 2


def test_slurm_tasks_become_torch_distributed_ranks(monkeypatch):
    from rlrecipes.launch.slurm import SlurmRanks

    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE"):
        # setenv first: it records "absent", so the values SlurmRanks writes are removed afterwards
        # (a bare delenv of an absent key records nothing, and WORLD_SIZE=8 would leak into every
        # later test's subprocesses, which then wait for 7 peers)
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    slurm = {
        "SUBMITIT_EXECUTOR": "slurm",
        "SLURM_JOB_ID": "123",
        "SLURM_NTASKS": "8",
        "SLURM_PROCID": "5",
        "SLURM_LOCALID": "1",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NODEID": "1",
        "SLURM_JOB_NODELIST": "gpu[07-08]",
    }
    for key, value in slurm.items():
        monkeypatch.setenv(key, value)
    SlurmRanks().on_job_start(config=None)
    assert (os.environ["RANK"], os.environ["LOCAL_RANK"], os.environ["WORLD_SIZE"]) == ("5", "1", "8")
    assert os.environ["MASTER_ADDR"] == "gpu07" and os.environ["LOCAL_WORLD_SIZE"] == "4"
    assert "CUDA_VISIBLE_DEVICES" not in slurm  # every GPU stays visible to the rank


def test_a_single_task_or_a_local_job_is_left_alone(monkeypatch):
    from rlrecipes.launch.slurm import SlurmRanks

    for key in (
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "LOCAL_WORLD_SIZE",
        "SUBMITIT_EXECUTOR",
    ):
        monkeypatch.setenv(key, "")  # records "absent" (see above)
        monkeypatch.delenv(key)
    monkeypatch.setenv("SLURM_NTASKS", "4")  # e.g. an interactive allocation, not a submitit job
    SlurmRanks().on_job_start(config=None)
    assert "RANK" not in os.environ


def test_the_time_limit_warning_stops_training_like_sigterm(monkeypatch):
    """submitit's own SIGUSR2 handler raises in the main task: no checkpoint. The job's
    handler turns it into the SIGTERM that training answers with a checkpoint."""
    import signal

    from rlrecipes.launch.slurm import SlurmRanks

    received = []
    previous = {s: signal.getsignal(s) for s in (signal.SIGUSR2, signal.SIGTERM)}
    try:
        signal.signal(signal.SIGUSR2, lambda *a: received.append("submitit"))  # what submitit installs
        signal.signal(signal.SIGTERM, lambda *a: received.append("SIGTERM"))  # training's GracefulStop
        monkeypatch.setenv("SUBMITIT_EXECUTOR", "slurm")
        monkeypatch.setenv("SLURM_NTASKS", "1")
        SlurmRanks().on_job_start(config=None)
        os.kill(os.getpid(), signal.SIGUSR2)
        assert received == ["SIGTERM"]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

"""An eval's run directory: created once, or reopened to resume the same experiment."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rlrecipes import rundir
from rlrecipes.errors import UserError
from rlrecipes.rundir import CLAIM, LOCK, MARKER, RunDirError, create_run_dir, lock_run_dir, release_run_dir

# Settings that must match for a resumed eval to continue the same experiment.
_RESUME_KEYS = (
    "model",
    "protocol",
    "seed",
    "data_dir",
    "generations",
    "benchmark.answer_style",
    # HF reseeds per chunk of generation.batch_size problems: another size samples otherwise
    "generation.batch_size",
    "generation.backend",
    "data.synthetic",
    "data.template",
    "data.answer_style",
    "data.path",
    "data.split",
    "data.problem_field",
    "data.answer_field",
    "grading.rel_tol",
)


def _resume_dir(cfg: Any, path: Path) -> Path:
    """Reopen ``path`` for a resumed eval after checking it is the same experiment; it is
    locked for this process first (an eval another process runs there is refused)."""
    lock_run_dir(path)
    old_cfg = rundir.read_config(path)
    diffs = [
        k for k in _RESUME_KEYS if OmegaConf.select(old_cfg, k, default=None) != OmegaConf.select(cfg, k, default=None)
    ]
    if diffs:
        raise RunDirError(
            f"run_dir={path} holds an eval with different {', '.join(diffs)}; "
            "resume only continues the same model, protocol and seed"
        )
    return path


def open_run_dir(cfg: Any, job_num: int | None, sweep_dir: str | None) -> Path:
    label = f"eval-{'-'.join(cfg.benchmark.names)[:40]}"
    if cfg.resume:
        if not cfg.run_dir:
            raise UserError("resume=true needs run_dir=PATH (the eval to continue)")
        path = Path(cfg.run_dir).expanduser() / (str(job_num) if job_num is not None else "")
        if (path / MARKER).is_file():
            return _resume_dir(cfg, path)
    return create_run_dir(cfg.run_dir, cfg.output_root, label, job_num=job_num, sweep_dir=sweep_dir, command="eval")


def log_resume(run_dir: Path) -> None:
    """The first config.yaml stays; each resume is one line of resumes.log."""
    rundir.append_line(
        run_dir / "resumes.log", f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {shlex.join(rundir.invocation or sys.argv)}"
    )


def discard_if_empty(run_dir: Path) -> None:
    """Remove a run directory this job created when it holds no samples yet."""
    samples = run_dir / "samples.jsonl"
    if samples.is_file() and samples.stat().st_size > 0:
        return
    release_run_dir(run_dir)
    for name in (MARKER, "versions.json", "samples.jsonl", CLAIM, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    try:
        run_dir.rmdir()
    except OSError:  # something else lives there: leave it
        pass

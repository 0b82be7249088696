"""`rlrecipes eval`: the Hydra job around `run_eval`, run directories and resuming.

``benchmark=a,b`` without ``-m`` means "these benchmarks in one run" (rewritten to
``benchmark=a benchmark.names=[a,b]``); with ``-m`` it stays a Hydra sweep, one run per
benchmark, like any other comma list (checkpoints, protocols, seeds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.rundir import CLAIM, MARKER, RunDirError, create_run_dir, drop_hydra_job_dir, write_manifest

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


def rewrite_benchmark_list(overrides: Sequence[str], multirun: bool) -> list[str]:
    out: list[str] = []
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if not multirun and sep and key == "benchmark" and "," in value and not value.startswith(("[", "glob(")):
            names = [v.strip() for v in value.split(",") if v.strip()]
            out += [f"benchmark={names[0]}", f"benchmark.names=[{','.join(names)}]"]
        else:
            out.append(ov)
    return out


def _resume_dir(cfg: Any, path: Path) -> Path:
    """Reopen ``path`` for a resumed eval after checking it is the same experiment."""
    old_cfg = OmegaConf.load(path / MARKER)
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
    return create_run_dir(cfg.run_dir, cfg.output_root, label, job_num=job_num, sweep_dir=sweep_dir)


def eval_job(cfg: Any) -> float | None:
    """The Hydra task: one eval run; returns the headline average (for sweepers)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from rlrecipes.cli import _fail, console
    from rlrecipes.eval.report import print_eval_summary, write_report
    from rlrecipes.eval.runner import prepare, run_eval

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    run_dir, fresh = None, False
    try:
        prepared = prepare(cfg)  # inputs first: a mistake must not leave a run directory
        run_dir = open_run_dir(cfg, hc.job.num if multirun else None, hc.sweep.dir if multirun else None)
        if multirun:
            drop_hydra_job_dir(run_dir)
        fresh = not (run_dir / MARKER).exists()
        if fresh:
            write_manifest(run_dir, cfg)
        else:  # the first config.yaml stays; each resume is one line of resumes.log
            _log_resume(run_dir)
        console.rule(f"[bold]eval[/] {', '.join(cfg.benchmark.names)} -> {run_dir}")
        summary = run_eval(cfg, run_dir, log=console.log, prepared=prepared)
    except BaseException as exc:  # a crash before the first sample leaves nothing to keep
        if run_dir is not None and fresh:
            _discard_if_empty(run_dir)
        if isinstance(exc, UserError):
            _fail(str(exc))
        raise
    write_report(run_dir, summary)
    print_eval_summary(summary, run_dir, console)
    return summary["average"]["headline"]


def _log_resume(run_dir: Path) -> None:
    import shlex
    import sys
    import time

    from rlrecipes import rundir

    rundir.append_line(
        run_dir / "resumes.log", f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {shlex.join(rundir.invocation or sys.argv)}"
    )


def _discard_if_empty(run_dir: Path) -> None:
    """Remove a run directory this job created when it holds no samples yet."""
    samples = run_dir / "samples.jsonl"
    if samples.is_file() and samples.stat().st_size > 0:
        return
    for name in (MARKER, "versions.json", "samples.jsonl", CLAIM):
        (run_dir / name).unlink(missing_ok=True)
    try:
        run_dir.rmdir()
    except OSError:  # something else lives there: leave it
        pass


def eval_command(overrides: Sequence[str], multirun: bool) -> None:
    from rlrecipes.config.hydra_app import run_hydra

    run_hydra("eval", eval_job, rewrite_benchmark_list(overrides, multirun), multirun)

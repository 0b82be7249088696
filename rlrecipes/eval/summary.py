"""An eval's summary.json: metrics per benchmark, grading failures, settings, versions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from rlrecipes.display import MOSTLY_TRUNCATED
from rlrecipes.errors import UserError
from rlrecipes.eval.samples import ProblemRecord
from rlrecipes.eval.scoring import headline
from rlrecipes.grading import GradingCounts, GradingPool, grading_counts
from rlrecipes.rundir import versions, write_json
from rlrecipes.storage import writing


def make_pool(cfg: Any) -> GradingPool | None:
    if cfg.grading.workers == 0:
        return None
    return GradingPool(cfg.grading.workers, timeout_s=cfg.grading.timeout_s, rel_tol=cfg.grading.rel_tol)


class count_failures_into:  # noqa: N801 (a context manager used like a function)
    """Add the grading timeouts and errors counted inside the block to ``into``."""

    def __init__(self, into: GradingCounts) -> None:
        self.into = into

    def __enter__(self) -> None:
        self.before = grading_counts()

    def __exit__(self, *exc: object) -> None:
        after = grading_counts()
        self.into.add(after.errors - self.before.errors, after.timeouts - self.before.timeouts)


def failure_report(counts: GradingCounts, records: list[ProblemRecord], verify: Any) -> dict[str, Any]:
    """``summary.json``'s per-benchmark grading line: answers graded, timeouts, errors."""
    graded = 0 if verify is not None else sum(len(r.answers) for r in records)
    return {
        "answers": graded,
        "timeouts": counts.timeouts,
        "errors": counts.errors,
        "failure_rate": round((counts.timeouts + counts.errors) / graded, 6) if graded else 0.0,
    }


def check_failure_rate(cfg: Any, results: dict[str, dict[str, Any]]) -> None:
    """One line, after the results are written, when grading failed too often."""
    limit = cfg.grading.max_failure_rate
    for name, m in results.items():
        g = m.get("grading") or {}
        if g.get("answers") and g["failure_rate"] > limit:
            raise UserError(
                f"{name}: grading timed out or failed on {g['timeouts'] + g['errors']} of "
                f"{g['answers']} answers ({g['failure_rate']:.1%} > grading.max_failure_rate="
                f"{limit}); they count as wrong in summary.json. Raise grading.timeout_s "
                "or the limit to accept the run"
            )


def truncation_warnings(results: dict[str, dict[str, Any]], settings: dict[str, Any]) -> list[str]:
    """One line per benchmark where most completions hit the token limit."""
    out = []
    for name, m in results.items():
        share = m.get("truncated_fraction")
        if share is not None and share > MOSTLY_TRUNCATED:
            limit = settings.get(name, {}).get("sampling", {}).get("max_new_tokens", "?")
            out.append(
                f"{name}: {100 * share:.0f}% of completions hit the {limit}-token limit, so their answers "
                "are cut; raise protocol.max_new_tokens"
            )
    return out


def build_summary(
    cfg: Any,
    results: dict[str, dict[str, Any]],
    settings: dict[str, Any],
    model: str | None,
    started: float,
    timing: dict[str, float],
    run_dir: Path,
    backend: str | None = None,
) -> dict[str, Any]:
    heads = [headline(m)[1] for m in results.values() if m.get("problems")]
    summary = {
        "kind": "eval",
        "model": model,
        "generation_backend": backend,  # None: nothing generated this time
        "protocol": OmegaConf.to_container(cfg.protocol, resolve=True),
        "seed": cfg.seed,
        "benchmarks": results,
        "average": {"headline": round(sum(heads) / len(heads), 6) if heads else None, "benchmarks": len(heads)},
        "settings": settings,
        "warnings": truncation_warnings(results, settings),
        "generations": cfg.generations,
        "data_dir": cfg.data_dir,
        "limit": cfg.limit,
        "wall_seconds": round(time.time() - started, 2),
        **{k: round(v, 2) for k, v in timing.items()},
        "versions": versions(cfg, backend),
    }
    with writing(run_dir / "summary.json", f"free space and rerun the same command with resume=true run_dir={run_dir}"):
        write_json(run_dir / "summary.json", summary)  # every problem is in samples.jsonl: resume regrades them
    return summary

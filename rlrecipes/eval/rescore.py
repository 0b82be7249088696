"""Re-score completions made by another harness: ``generations=FILE.jsonl benchmark=NAME``.

Each line is ``{"gold": ..., "completions": [...]}`` with optional ``"id"`` and
``"problem"``. The benchmark selects the answer style and grading rules; a line
without ``gold`` takes it from the benchmark's problem with the same ``id`` (the
benchmark is then loaded, from ``data_dir`` or the hub). The result is the same
``summary.json`` / ``samples.jsonl`` as a generating eval.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlrecipes.errors import UserError
from rlrecipes.eval.benchmarks import BENCHMARKS, resolve_benchmarks
from rlrecipes.eval.items import BenchmarkItems
from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_generations
from rlrecipes.eval.scoring import compute_metrics, grade_records
from rlrecipes.grading import STYLES, GradingPool


def _benchmark(cfg: Any) -> str:
    names = resolve_benchmarks(list(cfg.benchmark.names))
    if len(names) != 1:
        raise UserError(f"generations= re-scores one benchmark at a time; got benchmark names "
                        f"{', '.join(names)}")
    return names[0]


@dataclass
class RescoreJob:
    """Everything checked and read before the run directory is created."""

    name: str
    style: str
    records: list[ProblemRecord]
    verify: Callable[[str, str], bool] | None


def prepare_rescore(cfg: Any) -> RescoreJob:
    from rlrecipes.eval.runner import plan_benchmark

    name = _benchmark(cfg)
    rows = list(read_generations(cfg.generations))
    if not rows:
        raise UserError(f"generations file {cfg.generations} has no rows")
    spec = BENCHMARKS[name]
    items: BenchmarkItems | None = None
    if spec.synthetic or any(row["gold"] is None for _, row in rows):
        plan = plan_benchmark(cfg, name)  # golds by id, or the synthetic task's checker
        items, style = plan.items, plan.style
    else:
        style = cfg.benchmark.answer_style or cfg.protocol.answer_style or spec.answer_style
        if style not in STYLES:
            key = "benchmark.answer_style" if cfg.benchmark.answer_style else "protocol.answer_style"
            raise UserError(f"{key}={style!r}; valid: {', '.join(STYLES)}")
    by_id = {it.id: it for it in items} if items is not None else {}
    records = []
    for lineno, row in rows:
        item = by_id.get(row.get("id")) if row.get("id") is not None else None
        gold = row["gold"] if row["gold"] is not None else (item.gold if item else None)
        if gold is None:
            why = "has no 'id'" if row.get("id") is None else f"id {row['id']!r} is not in {name}"
            raise UserError(f"{cfg.generations}:{lineno}: no 'gold', and the line {why}; "
                            "add a gold answer or an id of the benchmark")
        records.append(ProblemRecord(
            benchmark=name, id=row.get("id") or f"line-{lineno}",
            problem=row.get("problem") or (item.problem if item else ""), prompt="", gold=gold,
            subject=item.subject if item else None, level=item.level if item else None,
            completions=list(row["completions"]),
        ))
    return RescoreJob(name, style, records, items.verify if items is not None else None)


def rescore(cfg: Any, run_dir: Path, job: RescoreJob, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Grade the job's completions; write ``samples.jsonl`` and ``summary.json``."""
    from rlrecipes.eval.runner import build_summary

    started = time.time()
    log(f"re-scoring {len(job.records)} problems from {cfg.generations} as {job.name} "
        f"(answer style {job.style})")
    pool = GradingPool(cfg.grading.workers, timeout_s=cfg.grading.timeout_s) if cfg.grading.workers != 0 else None
    try:
        grade_records(job.records, job.style, verify=job.verify, pool=pool, timeout_s=cfg.grading.timeout_s)
        timing = {"grading_seconds": time.time() - started}
        SampleWriter(run_dir / "samples.jsonl", keep=job.records)
        metrics = compute_metrics(job.records, list(cfg.protocol.ks), pool)
    finally:
        if pool is not None:
            pool.close()
    settings = {job.name: {"source": str(cfg.generations), "answer_style": job.style}}
    return build_summary(cfg, {job.name: metrics}, settings, None, started, timing, run_dir)

"""Re-score completions made by another harness: ``generations=FILE.jsonl benchmark=NAME``.

Each line is ``{"gold": ..., "completions": [...]}`` with optional ``"answers"``,
``"id"`` and ``"problem"`` (Qwen2.5-Math's output names ``gt``, ``code``, ``pred``,
``idx``, ``question`` are read too; see ``samples.py``). What is graded, said in the
log and in ``summary.json`` (``settings.<benchmark>.answers_from``):

- the file's pre-extracted ``answers`` when every line has them (``rescore_from=auto``,
  the default, or ``rescore_from=answers``), compared as they are;
- else the answers extracted from the completions with the benchmark's answer style;
  ``answer_style=none`` takes each completion as the answer itself.

The benchmark selects the grading rules; a line without ``gold`` takes it from the
benchmark's problem with the same ``id`` (the benchmark is then loaded, from
``data_dir`` or the hub). The result is the same ``summary.json`` / ``samples.jsonl``
as a generating eval.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlrecipes.errors import UserError
from rlrecipes.eval.benchmarks import BENCHMARKS, resolve_benchmarks
from rlrecipes.eval.items import BenchmarkItems
from rlrecipes.eval.plan import plan_benchmark
from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_generations
from rlrecipes.eval.scoring import compute_metrics, grade_records
from rlrecipes.eval.summary import build_summary, check_failure_rate, count_failures_into, failure_report, make_pool
from rlrecipes.grading import AnswerStyle, GradingCounts
from rlrecipes.grading.equivalence import gold_answer


def _benchmark(cfg: Any) -> str:
    names = resolve_benchmarks(list(cfg.benchmark.names))
    if len(names) != 1:
        raise UserError(f"generations= re-scores one benchmark at a time; got benchmark names {', '.join(names)}")
    return names[0]


@dataclass
class RescoreJob:
    """Everything checked and read before the run directory is created."""

    name: str
    style: str
    records: list[ProblemRecord]
    verify: Callable[[str, str], bool] | None
    answers_from: str = "completions"  # "answers" (pre-extracted) | "completions"
    ignored: tuple[str, ...] = ()  # fields of the file that were not read


def prepare_rescore(cfg: Any) -> RescoreJob:

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
        if style not in AnswerStyle.values():  # a benchmark's own style has no schema to check it
            key = "benchmark.answer_style" if cfg.benchmark.answer_style else "protocol.answer_style"
            raise UserError(f"{key}={style!r}; valid: {AnswerStyle.valid()}")
    by_id = {it.id: it for it in items} if items is not None else {}
    answers_from = _answers_from(cfg, rows, style)
    records = []
    for lineno, row in rows:
        item = by_id.get(row.get("id")) if row.get("id") is not None else None
        gold = gold_answer(row["gold"]) if row["gold"] is not None else (item.gold if item else None)
        if gold is None:
            why = "has no 'id'" if row.get("id") is None else f"id {row['id']!r} is not in {name}"
            raise UserError(
                f"{cfg.generations}:{lineno}: no 'gold', and the line {why}; "
                "add a gold answer or an id of the benchmark"
            )
        pre = answers_from == "answers"
        records.append(
            ProblemRecord(
                benchmark=name,
                id=row.get("id") or f"line-{lineno}",
                problem=row.get("problem") or (item.problem if item else ""),
                prompt="",
                gold=gold,
                subject=item.subject if item else None,
                level=item.level if item else None,
                completions=list(row["completions"] or ["" if a is None else a for a in row["answers"]]),
                answers=list(row["answers"]) if pre else [],
            )
        )
    ignored = tuple(sorted({k for _, row in rows for k in row["ignored"]}))
    return RescoreJob(name, style, records, items.verify if items is not None else None, answers_from, ignored)


def _answers_from(cfg: Any, rows: list[tuple[int, dict[str, Any]]], style: str) -> str:
    """Grade the file's own answers, or extract from its completions (see module doc)."""
    choice = cfg.rescore_from  # a RescoreFrom (eval/config.py): composition refuses any other value
    with_answers = all(row["answers"] is not None for _, row in rows)
    with_completions = all(row["completions"] is not None for _, row in rows)
    if choice == "answers" and not with_answers:
        line = next(n for n, row in rows if row["answers"] is None)
        raise UserError(f"rescore_from=answers: {cfg.generations}:{line} has no 'answers' (or 'pred') field")
    if choice == "completions" and not with_completions:
        line = next(n for n, row in rows if row["completions"] is None)
        raise UserError(f"rescore_from=completions: {cfg.generations}:{line} has no 'completions' field")
    if choice == "answers" or (choice == "auto" and with_answers and style != "none"):
        return "answers"
    if not with_completions:
        line = next(n for n, row in rows if row["completions"] is None)
        raise UserError(
            f"{cfg.generations}:{line} has answers but no completions while other lines "
            "have no answers; give every line the same fields"
        )
    return "completions"


def rescore(cfg: Any, run_dir: Path, job: RescoreJob, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Grade the job's completions; write ``samples.jsonl`` and ``summary.json``."""
    started = time.time()
    started = time.time()
    how = describe(job)
    log(f"re-scoring {len(job.records)} problems from {cfg.generations} as {job.name}: {how}")
    if job.ignored:
        log(f"fields not read: {', '.join(job.ignored)}")
    pool = make_pool(cfg)
    failures = GradingCounts()
    try:
        with count_failures_into(failures):
            grade_records(
                job.records,
                None if job.answers_from == "answers" else job.style,
                verify=job.verify,
                pool=pool,
                timeout_s=cfg.grading.timeout_s,
                rel_tol=cfg.grading.rel_tol,
            )
        timing = {"grading_seconds": time.time() - started}
        SampleWriter(run_dir / "samples.jsonl", keep=job.records)
        metrics = compute_metrics(
            job.records,
            list(cfg.protocol.ks),
            pool,
            cfg.protocol.maj_ties,
            timeout_s=cfg.grading.timeout_s,
            rel_tol=cfg.grading.rel_tol,
        )
    finally:
        if pool is not None:
            pool.close()
    metrics["grading"] = failure_report(failures, job.records, job.verify)
    settings = {
        job.name: {
            "source": str(cfg.generations),
            "answer_style": job.style,
            "answers_from": "pre-extracted answers" if job.answers_from == "answers" else "completions",
        }
    }
    summary = build_summary(cfg, {job.name: metrics}, settings, None, started, timing, run_dir)
    check_failure_rate(cfg, {job.name: metrics})
    return summary


def describe(job: RescoreJob) -> str:
    if job.answers_from == "answers":
        return "grading the file's pre-extracted answers as they are (rescore_from=completions re-extracts)"
    if job.style == "none":
        return "each completion is the answer itself (answer_style=none)"
    return f"answers extracted from the completions (answer style {job.style})"

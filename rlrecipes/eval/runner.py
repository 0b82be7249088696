"""`run_eval(cfg, run_dir)`: benchmarks -> prompts -> completions -> grades -> metrics.

Everything is checked before the model loads (benchmark names, data files, template
and answer style), so mistakes cost seconds. Problems are generated in fixed chunks;
each chunk is graded and appended to ``samples.jsonl`` at once, so with ``resume=true``
an interrupted eval continues where it stopped. ``generations=FILE`` skips the model
and grades completions produced elsewhere (see ``rescore.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import torch

from rlrecipes.data.synthetic import make_task
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import UserError
from rlrecipes.eval.backends import Backend, check_backend, choose_backend, make_backend, stable_seed
from rlrecipes.eval.benchmarks import resolve_benchmarks
from rlrecipes.eval.job_size import token_slots
from rlrecipes.eval.plan import Plan, plan_benchmark
from rlrecipes.eval.plan_block import Rows, plan_rows, plan_text
from rlrecipes.eval.progress import EvalProgress
from rlrecipes.eval.rescore import prepare_rescore, rescore
from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_samples
from rlrecipes.eval.scoring import compute_metrics, grade_records
from rlrecipes.eval.summary import build_summary, check_failure_rate, count_failures_into, failure_report, make_pool
from rlrecipes.generation import sample_chunks
from rlrecipes.grading import GradingCounts, GradingPool
from rlrecipes.hub import check_model_available
from rlrecipes.models import check_model_location, resolve_model_path
from rlrecipes.rundir import record_vllm
from rlrecipes.tool_loop.build import check_tools
from rlrecipes.tool_loop.greedy import with_tools

Log = Callable[[str], None]
ShowPlan = Callable[[Rows], None]  # shows the eval plan's (what, value) rows as one block


def _model_path(cfg: Any, log: Log) -> str:
    """The model's folder or hub id (the toy is built, once, on first use)."""
    task = make_task(cfg.data.synthetic) if cfg.model.builder == "toy" and not cfg.model.name_or_path else None
    path = resolve_model_path(cfg.model, task, cfg.data.synthetic, cfg.cache_dir, log)
    check_model_available(path, log=log)  # a hub id offline: in the cache, or one line before the plan
    return path


def _load_backend(
    cfg: Any, plans: list[Plan], todo: dict[str, list], threads: int, log: Log, show_plan: ShowPlan | None
) -> tuple[Backend, str]:
    """Choose the backend by the job's size, show the plan, then load the model."""
    path = _model_path(cfg, log)
    slots = token_slots((len(todo[p.name]), p.sampling.n, p.sampling.max_new_tokens) for p in plans)
    tools = bool(cfg.rollout.tools)  # the tool loop runs on transformers
    choice = choose_backend("hf" if tools else cfg.generation.backend, path, slots)
    rows = plan_rows(cfg, plans, todo, path, choice, threads, slots)
    show_plan(rows) if show_plan is not None else log(plan_text(rows))
    backend = make_backend(cfg.generation, cfg.model, path, cfg.seed, name=choice.name, log=log)
    return with_tools(backend, cfg.rollout), path


def _generate(
    plan: Plan,
    todo: list[tuple[int, Any]],
    backend: Backend,
    seed: int,
    writer: SampleWriter,
    pool: GradingPool | None,
    grading: Any,
    progress: EvalProgress,
    timing: dict[str, float],
) -> None:
    tokenizer = getattr(backend, "tokenizer", None)  # None: a test's scripted backend
    items_left = [it for _, it in todo]
    all_prompts = [render_prompt(it.problem, plan.template, tokenizer, plan.system_prompt) for it in items_left]
    retrieve = getattr(backend, "retrieve", None)  # rollout.tool_mode=rag_once: one search, its result after the prompt
    if retrieve is not None:
        all_prompts = [retrieve(prompt, it.problem) for prompt, it in zip(all_prompts, items_left)]
    all_seeds = [stable_seed(seed, plan.name, it.id) for it in items_left]
    positions = [i for i, _ in todo]
    for chunk in sample_chunks(backend, all_prompts, all_seeds, plan.sampling, positions, progress.within):
        timing["generation_seconds"] += chunk.seconds
        items = [items_left[i] for i in chunk.indices]
        prompts = [all_prompts[i] for i in chunk.indices]
        outputs = chunk.completions
        records = [
            ProblemRecord(
                benchmark=plan.name,
                id=it.id,
                problem=it.problem,
                prompt=prompt,
                gold=it.gold,
                subject=it.subject,
                level=it.level,
                completions=[c.text for c in outs],
                num_tokens=[c.num_tokens for c in outs],
                finish_reasons=[c.finish_reason for c in outs],
                tool_stats=None if outs[0].tool_stats is None else [c.tool_stats for c in outs],
            )
            for it, prompt, outs in zip(items, prompts, outputs)
        ]
        started = time.time()
        grade_records(
            records,
            plan.style,
            verify=plan.items.verify,
            pool=pool,
            timeout_s=grading.timeout_s,
            rel_tol=grading.rel_tol,
        )
        timing["grading_seconds"] += time.time() - started
        writer.write(records)
        reasons = [f for r in records for f in r.finish_reasons]
        progress.advance(len(items), truncated=reasons.count("length"), completions=len(reasons))


def prepare(cfg: Any) -> Any:
    """Check and load every input (benchmarks or the generations file) before any run
    directory exists, so a mistake leaves nothing behind: a list of plans, or a RescoreJob."""
    check_eval(cfg)
    if cfg.generations:
        return prepare_rescore(cfg)
    return [plan_benchmark(cfg, name) for name in resolve_benchmarks(list(cfg.benchmark.names))]


def check_eval(cfg: Any) -> None:
    """The checks of an eval config that load nothing: `rlrecipes eval -m` runs them on every
    job of a sweep before the first starts."""
    if cfg.grading.timeout_s < 1:
        raise UserError(f"grading.timeout_s={cfg.grading.timeout_s} must be at least 1 (seconds per answer)")
    if cfg.grading.workers is not None and cfg.grading.workers < 0:
        raise UserError(
            f"grading.workers={cfg.grading.workers}; valid: a number of processes, 0 = in-process, null = one per CPU"
        )
    if not 0 <= cfg.grading.rel_tol < 1:
        raise UserError(
            f"grading.rel_tol={cfg.grading.rel_tol}; valid: 0 (exact) up to below 1 "
            "(a relative tolerance between non-integer decimals)"
        )
    if not 0 <= cfg.grading.max_failure_rate <= 1:
        raise UserError(f"grading.max_failure_rate={cfg.grading.max_failure_rate}; valid: a share from 0 to 1")
    if cfg.threads is not None and cfg.threads < 1:
        raise UserError(f"threads={cfg.threads}; valid: a number of CPU threads (at least 1), or null")
    if cfg.generations:
        return
    check_backend(cfg.generation.backend)
    check_tools(cfg.rollout)
    if cfg.rollout.tools and cfg.generation.backend == "vllm":
        raise UserError("rollout.tools: the tool loop runs with transformers; set generation.backend=hf (or auto)")
    if cfg.model.name_or_path:
        check_model_location(cfg.model.name_or_path)


def run_eval(
    cfg: Any, run_dir: Path, log: Log = print, prepared: Any = None, show_plan: ShowPlan | None = None
) -> dict[str, Any]:
    """Evaluate, write ``samples.jsonl`` and ``summary.json`` in ``run_dir``, return the summary.
    The plan (what runs, its size, the backend and why) goes to `show_plan`, else to `log`."""
    prepared = prepare(cfg) if prepared is None else prepared
    if cfg.generations:
        return rescore(cfg, run_dir, prepared, log)
    started, plans = time.time(), prepared
    for plan in plans:
        log(plan.items.report())
    threads = set_threads(cfg.threads)
    path = run_dir / "samples.jsonl"
    earlier = read_samples(path) if cfg.resume else []
    done = {(r.benchmark, r.id): r for r in earlier}
    writer = SampleWriter(path, keep=earlier)
    todo = {p.name: [(i, it) for i, it in enumerate(p.items) if (p.name, it.id) not in done] for p in plans}
    if earlier:
        log(f"resuming: {len(done)} problems already done in {path}")
    timing = {"generation_seconds": 0.0, "grading_seconds": 0.0}
    pool = make_pool(cfg)
    failures = {p.name: GradingCounts() for p in plans}
    model_path, backend_used = None, None
    try:
        if any(todo.values()):
            backend, model_path = _load_backend(cfg, plans, todo, threads, log, show_plan)
            backend_used = backend.name  # what generation.backend=auto chose, for summary.json
            if backend_used == "vllm":  # versions.json was written before the choice
                record_vllm(run_dir, cfg, backend_used)
            with EvalProgress(
                sum(map(len, todo.values())), enabled=cfg.progress, every=cfg.progress_every, log=log
            ) as progress:
                for plan in plans:
                    progress.start_benchmark(plan.name)
                    with count_failures_into(failures[plan.name]):
                        _generate(plan, todo[plan.name], backend, cfg.seed, writer, pool, cfg.grading, progress, timing)
        records = {(r.benchmark, r.id): r for r in read_samples(path)}
        results = {}
        for plan in plans:
            recs = [records[(plan.name, it.id)] for it in plan.items if (plan.name, it.id) in records]
            # failures count answers graded against the gold, not the votes' comparisons
            results[plan.name] = compute_metrics(
                recs, plan.ks, pool, cfg.protocol.maj_ties, timeout_s=cfg.grading.timeout_s, rel_tol=cfg.grading.rel_tol
            )
            results[plan.name]["grading"] = failure_report(failures[plan.name], recs, plan.items.verify)
    finally:
        if pool is not None:
            pool.close()
    summary = build_summary(
        cfg,
        results,
        {p.name: p.describe() for p in plans},
        model_path or _configured_model(cfg),
        started,
        timing,
        run_dir,
        backend_used,
    )
    check_failure_rate(cfg, results)
    return summary


def set_threads(threads: int | None) -> int:
    """Set torch's CPU threads for generation: ``threads``, or half the CPUs this
    process may use (at least 1). torch's default (every core) lost 7x on a loaded
    2-core machine: its threads spin while waiting for cores other processes hold."""
    if threads is not None and threads < 1:
        raise UserError(f"threads={threads}; valid: a number of CPU threads (at least 1), or null")
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    n = threads or max(1, cpus // 2)
    torch.set_num_threads(n)
    return n


def _configured_model(cfg: Any) -> str:
    return str(cfg.model.name_or_path or f"{cfg.model.name} (builder {cfg.model.builder})")

"""`run_eval(cfg, run_dir)`: benchmarks -> prompts -> completions -> grades -> metrics.

Everything is checked before the model loads (benchmark names, data files, template
and answer style), so mistakes cost seconds. Problems are generated in fixed chunks;
each chunk is graded and appended to ``samples.jsonl`` at once, so with ``resume=true``
an interrupted eval continues where it stopped. ``generations=FILE`` skips the model
and grades completions produced elsewhere (see ``rescore.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any, Callable

from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.eval.backends import Backend, Sampling, check_backend, make_backend, stable_seed
from rlrecipes.eval.benchmarks import BENCHMARKS, load_benchmark, resolve_benchmarks
from rlrecipes.eval.items import BenchmarkItems
from rlrecipes.eval.progress import EvalProgress
from rlrecipes.eval.samples import ProblemRecord, SampleWriter, read_samples
from rlrecipes.eval.scoring import compute_metrics, grade_records, headline
from rlrecipes.grading import STYLES, GradingCounts, GradingPool, grading_counts
from rlrecipes.metrics import TIE_RULES


@dataclass
class Plan:
    """One benchmark with the protocol resolved against its defaults."""

    name: str
    items: BenchmarkItems
    template: str
    system_prompt: str | None
    style: str
    sampling: Sampling
    ks: list[int]

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.items.report(),
            "template": self.template,
            "answer_style": self.style,
            "sampling": self.sampling.__dict__ | {"stop": list(self.sampling.stop)},
        }


def plan_benchmark(cfg: Any, name: str) -> Plan:
    from rlrecipes.data.templates import TEMPLATES

    spec, p = BENCHMARKS[name], cfg.protocol
    items = load_benchmark(name, cfg.data_dir, cfg.limit, synthetic=cfg.data.synthetic, data=cfg.data)
    if not items:
        why = f"limit={cfg.limit}" if cfg.limit is not None and cfg.limit <= 0 else items.report()
        raise UserError(f"benchmark {name}: no problems to evaluate ({why})")
    if spec.synthetic or spec.from_data:  # the prompt and answer format of the data config
        template = p.template or cfg.data.template
        system = p.system_prompt if p.system_prompt is not None else cfg.data.system_prompt
        default_style = cfg.data.answer_style
    else:
        template, system, default_style = p.template or spec.template, p.system_prompt, spec.answer_style
    style = cfg.benchmark.answer_style or p.answer_style or default_style
    if style not in STYLES:
        raise UserError(f"answer style {style!r}; valid: {', '.join(STYLES)}")
    if template not in TEMPLATES:
        raise UserError(f"protocol.template={template!r}; valid: {', '.join(TEMPLATES)}")
    over = {k: v for k, v in p.per_benchmark[name].items() if v is not None}
    knobs = {k: over.get(k, p[k]) for k in ("num_samples", "temperature", "top_p", "top_k", "max_new_tokens")}
    if knobs["num_samples"] < 1:
        raise UserError(f"protocol.num_samples={knobs['num_samples']} for {name}; must be at least 1")
    sampling = Sampling(
        n=knobs["num_samples"],
        temperature=knobs["temperature"],
        top_p=knobs["top_p"],
        top_k=knobs["top_k"],
        max_new_tokens=knobs["max_new_tokens"] or spec.max_new_tokens,
        stop=tuple(p.stop),
    )
    return Plan(name, items, template, system, style, sampling, list(p.ks))


def _load_backend(cfg: Any, log: Callable[[str], None]) -> tuple[Backend, str]:
    from rlrecipes.data.synthetic import make_task
    from rlrecipes.models import resolve_model_path

    task = make_task(cfg.data.synthetic) if cfg.model.builder == "toy" and not cfg.model.name_or_path else None
    path = resolve_model_path(cfg.model, task, cfg.data.synthetic, cfg.cache_dir, log)
    backend = make_backend(cfg.generation, cfg.model, path, cfg.seed)
    log(f"model: {path} (generation.backend={cfg.generation.backend}: {backend.name})")
    return backend, path


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
    from rlrecipes.data.templates import render_prompt

    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is None:
        tokenizer = _tokenizer_of(backend)
    size = backend.chunk_size(plan.sampling)
    for _, group in groupby(todo, key=lambda pair: pair[0] // size):  # fixed chunks: reproducible seeds
        items = [it for _, it in group]
        prompts = [render_prompt(it.problem, plan.template, tokenizer, plan.system_prompt) for it in items]
        started = time.time()
        outputs = backend.generate(prompts, plan.sampling, [stable_seed(seed, plan.name, it.id) for it in items])
        timing["generation_seconds"] += time.time() - started
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
        progress.advance(len(items))


def _tokenizer_of(backend: Backend) -> Any:
    llm = getattr(backend, "_llm", None)
    return llm.get_tokenizer() if llm is not None else None


def prepare(cfg: Any) -> Any:
    """Check and load every input (benchmarks or the generations file) before any run
    directory exists, so a mistake leaves nothing behind: a list of plans, or a RescoreJob."""
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
    if cfg.protocol.maj_ties not in TIE_RULES:
        raise UserError(f"protocol.maj_ties={cfg.protocol.maj_ties!r}; valid: {', '.join(TIE_RULES)}")
    if cfg.threads is not None and cfg.threads < 1:
        raise UserError(f"threads={cfg.threads}; valid: a number of CPU threads (at least 1), or null")
    if cfg.generations:
        from rlrecipes.eval.rescore import prepare_rescore

        return prepare_rescore(cfg)
    check_backend(cfg.generation.backend)
    if cfg.model.name_or_path:
        from rlrecipes.models import check_model_location

        check_model_location(cfg.model.name_or_path)
    return [plan_benchmark(cfg, name) for name in resolve_benchmarks(list(cfg.benchmark.names))]


def run_eval(cfg: Any, run_dir: Path, log: Callable[[str], None] = print, prepared: Any = None) -> dict[str, Any]:
    """Evaluate, write ``samples.jsonl`` and ``summary.json`` in ``run_dir``, return the summary."""
    prepared = prepare(cfg) if prepared is None else prepared
    if cfg.generations:
        from rlrecipes.eval.rescore import rescore

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
            backend, model_path = _load_backend(cfg, log)
            backend_used = backend.name  # what generation.backend=auto chose, for summary.json
            log(f"generation: {threads} CPU thread{'s' * (threads != 1)} (threads=N to change)")
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


def set_threads(threads: int | None) -> int:
    """Set torch's CPU threads for generation: ``threads``, or half the CPUs this
    process may use (at least 1). torch's default (every core) lost 7x on a loaded
    2-core machine: its threads spin while waiting for cores other processes hold."""
    import os

    import torch

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
    from rlrecipes.rundir import versions, write_json

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
        "generations": cfg.generations,
        "data_dir": cfg.data_dir,
        "limit": cfg.limit,
        "wall_seconds": round(time.time() - started, 2),
        **{k: round(v, 2) for k, v in timing.items()},
        "versions": versions(),
    }
    write_json(run_dir / "summary.json", summary)
    return summary

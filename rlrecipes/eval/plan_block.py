"""The block `rlrecipes eval` prints before it generates: what will run, how big it is and
how it will run (backend and why, threads, batches), so a long job is never a surprise."""

from __future__ import annotations

from typing import Any, Sequence

from rlrecipes.eval.backends import BackendChoice
from rlrecipes.eval.benchmarks import BENCHMARKS
from rlrecipes.eval.job_size import format_slots
from rlrecipes.eval.plan import Plan


def token_source(cfg: Any, name: str) -> str:
    """Which setting gave benchmark `name` its token limit."""
    if cfg.protocol.per_benchmark[name].max_new_tokens is not None:
        return f"protocol.per_benchmark.{name}.max_new_tokens"
    if cfg.protocol.max_new_tokens is not None:
        return "protocol.max_new_tokens"
    spec = BENCHMARKS[name]
    if spec.synthetic and cfg.model.max_completion_length > spec.max_new_tokens:
        return "model.max_completion_length; protocol.max_new_tokens=N changes it"
    return "the benchmark's; protocol.max_new_tokens=N changes it"


def batch_size(choice: BackendChoice, cfg: Any, samples: int) -> int:
    """Problems per chunk (generated, graded and saved together), as each backend makes them."""
    return cfg.generation.batch_size * 8 if choice.name == "vllm" else max(1, cfg.generation.batch_size // samples)


Rows = list[tuple[str, str]]


def plan_rows(
    cfg: Any,
    plans: Sequence[Plan],
    todo: dict[str, list],
    model_path: str,
    choice: BackendChoice,
    threads: int,
    slots: int,
) -> Rows:
    """(what, value) rows of the plan; a command shows them as one block (`plan_text`)."""
    rows = [("model", model_path)]
    for plan in plans:
        s = plan.sampling
        left = len(todo[plan.name])
        done = f" ({len(plan.items) - left} done earlier)" if left < len(plan.items) else ""
        sampling = "greedy" if s.greedy else f"temperature {s.temperature}"
        rows.append((plan.name, f"{left} problems{done}, {s.n} sample{'s' * (s.n != 1)} each ({sampling})"))
        rows.append(("", f"up to {s.max_new_tokens} new tokens ({token_source(cfg, plan.name)})"))
    rows.append(("job size", f"{format_slots(slots)} token slots (problems x samples x max new tokens)"))
    rows.append(("backend", f"{choice.name} ({choice.why})"))
    if choice.name == "vllm":  # vLLM's engine process picks its own (OMP_NUM_THREADS)
        rows.append(("threads", "vLLM's own (threads=N sets transformers')"))
    else:
        rows.append(("threads", f"{threads} CPU thread{'s' * (threads != 1)} for generation (threads=N)"))
    sizes = {p.name: batch_size(choice, cfg, p.sampling.n) for p in plans}
    batches = sum(-(-len(todo[name]) // size) for name, size in sizes.items())
    per = "as problems finish" if choice.name == "vllm" else "after each"
    largest = max(sizes.values())
    rows.append(("batches", f"{batches} of up to {largest} problem{'s' * (largest != 1)}; progress {per}"))
    return rows


def plan_text(rows: Rows) -> str:
    """The plan as plain lines under an `eval plan` heading (log files)."""
    width = max(len(key) for key, _ in rows)
    return "\n".join(["eval plan", *(f"  {key:<{width}}  {value}" for key, value in rows)])

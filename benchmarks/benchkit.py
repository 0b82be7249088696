"""Pieces the bench_*.py scripts share: one training run in a scratch directory,
sampled held-out accuracy, and summary statistics. Not a benchmark itself."""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import Any, Callable

SAMPLES = 16


def train_in_scratch(overrides: list[str], inspect: Callable[[Path], Any] | None = None) -> dict[str, Any]:
    """Train with `overrides` in a temporary run directory.

    Returns the run's summary plus `rows` (its metrics.jsonl) and, when given, `inspected`:
    what `inspect(run_dir)` returned before the directory (and the model in it) went away.
    """
    from rlrecipes.compose import compose_config
    from rlrecipes.training.job import train

    cfg = compose_config("train", [*overrides, "trainer.progress=false"])
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        summary = train(cfg, run, log=lambda _: None)
        summary["rows"] = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        if inspect is not None:
            summary["inspected"] = inspect(run)
    return summary


def sampled_accuracy(model_path: str, cfg, problems, samples: int = SAMPLES, temperature: float = 1.0) -> float:
    """Mean correctness of `samples` completions per held-out problem (avg@k)."""
    outs = sample_completions(model_path, cfg, problems.eval, samples, temperature)
    hits = [problems.verify(text, it["answer"]) for texts, it in zip(outs, problems.eval) for text in texts]
    return sum(hits) / len(hits)


def sample_completions(
    model_path: str, cfg, items, samples: int = SAMPLES, temperature: float = 1.0
) -> list[list[str]]:
    """`samples` completions per problem in `items` (same prompts, length and seed as every bench)."""
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model

    model, tokenizer = load_model(model_path, cfg.model)
    prompts = [render_prompt(it["problem"], cfg.data.template, tokenizer, cfg.data.system_prompt) for it in items]
    return generate_completions(
        model,
        tokenizer,
        prompts,
        max_new_tokens=cfg.trainer.max_completion_length,
        do_sample=True,
        temperature=temperature,
        num_samples=samples,
        seed=1234,
        batch_size=32,
    )


def stats(values: list[float], digits: int = 4) -> dict[str, float]:
    """Mean, sample standard deviation, min and max."""
    return {
        "mean": round(statistics.mean(values), digits),
        "stdev": round(statistics.stdev(values), digits) if len(values) > 1 else 0.0,
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }

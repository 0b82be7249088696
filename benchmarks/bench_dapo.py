"""DAPO vs GRPO on the quick-start task under the same wall-clock budget, 3 seeds each.

Both recipes start from the same warm-started toy model and train until the budget is
spent (the step count is whatever fits), then held-out greedy accuracy is measured.
Prints one JSON line:
  grpo / dapo: accuracy after (per seed, mean, stdev, min, max), gain over the shared
      starting accuracy, optimizer steps that fit in the budget;
  dapo_minus_grpo_points: the difference of the mean accuracies, in points;
  dynamic_sampling: what the refill cost: prompts generated per prompt trained on,
      generation rounds per step, share of groups filtered out.

Usage: python benchmarks/bench_dapo.py [budget_seconds] [extra overrides...]
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchkit import stats

from rlrecipes.compose import compose_config

SEEDS = [0, 1, 2]


@contextlib.contextmanager
def wall_clock_budget(seconds: float):
    """Make every trainer built inside stop at its first optimizer step after `seconds` of training."""
    from transformers import TrainerCallback

    import rlrecipes.engine.trainer as engine

    class Stop(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            self.start = time.time()

        def on_step_end(self, args, state, control, **kwargs):
            control.should_training_stop = time.time() - self.start >= seconds

    class Budgeted(engine.RecipeGRPOTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.add_callback(Stop())

    original = engine.RecipeGRPOTrainer
    engine.RecipeGRPOTrainer = Budgeted  # run.train imports the class when it is called
    try:
        yield
    finally:
        engine.RecipeGRPOTrainer = original


def run(recipe: str, seed: int, budget: float, extra: list[str]) -> dict:
    from rlrecipes.training.job import train

    cfg = compose_config(
        "train", [f"recipe={recipe}", f"seed={seed}", "trainer.max_steps=100000", "trainer.progress=false", *extra]
    )
    with tempfile.TemporaryDirectory() as tmp, wall_clock_budget(budget):
        summary = train(cfg, Path(tmp), log=lambda _: None)
        rows = [json.loads(line) for line in (Path(tmp) / "metrics.jsonl").read_text().splitlines()]
    summary["ds_rows"] = [r for r in rows if "dynamic_sampling/rounds" in r]
    return summary


def describe(runs: list[dict]) -> dict:
    after = [r["accuracy_after"] for r in runs]
    return {
        "accuracy_after": [round(a, 4) for a in after],
        "accuracy_after_stats": stats(after),
        "gain_points_mean": round(100 * statistics.mean(a - r["accuracy_before"] for a, r in zip(after, runs)), 2),
        "steps": [r["steps"] for r in runs],
        "train_seconds": [r["train_seconds"] for r in runs],
    }


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
    extra = sys.argv[2:]
    results = {recipe: [run(recipe, seed, budget, extra) for seed in SEEDS] for recipe in ("grpo", "dapo")}
    ds = [row for r in results["dapo"] for row in r["ds_rows"]]
    generated = sum(row["dynamic_sampling/prompts_generated"] for row in ds)
    kept = sum(row["dynamic_sampling/prompts_kept"] for row in ds)
    grpo, dapo = describe(results["grpo"]), describe(results["dapo"])
    print(
        json.dumps(
            {
                "bench": "dapo_vs_grpo_same_wall_clock",
                "budget_seconds": budget,
                "seeds": SEEDS,
                "accuracy_before": [round(r["accuracy_before"], 4) for r in results["grpo"]],
                "grpo": grpo,
                "dapo": dapo,
                "dapo_minus_grpo_points": round(
                    100 * (dapo["accuracy_after_stats"]["mean"] - grpo["accuracy_after_stats"]["mean"]), 2
                ),
                "dynamic_sampling": {
                    "prompts_generated_per_kept": round(generated / kept, 3),
                    "rounds_per_step_mean": round(statistics.mean(r["dynamic_sampling/rounds"] for r in ds), 3),
                    "rounds_per_step_max": max(r["dynamic_sampling/rounds"] for r in ds),
                    "filtered_fraction_mean": round(
                        statistics.mean(r["dynamic_sampling/filtered_fraction"] for r in ds), 3
                    ),
                },
                "steps_ratio_dapo_over_grpo": round(statistics.mean(dapo["steps"]) / statistics.mean(grpo["steps"]), 3),
            }
        )
    )


if __name__ == "__main__":
    main()

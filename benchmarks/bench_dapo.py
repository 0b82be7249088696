"""DAPO vs GRPO on the quick-start task under the same wall-clock budget, 3 seeds each.

Both recipes start from the same warm-started toy model and train until the budget is
spent (the step count is whatever fits), then held-out greedy accuracy is measured.
Records (benchkit.save_result):
  grpo / dapo: accuracy after (per seed, mean, stdev, min, max), gain over the shared
      starting accuracy, optimizer steps that fit in the budget;
  dapo_minus_grpo_points: the difference of the mean accuracies, in points;
  dynamic_sampling: what the refill cost: prompts generated per prompt trained on,
      generation rounds per step, share of groups filtered out.

Usage: python benchmarks/bench_dapo.py [--budget SECONDS] [--seeds ...] [extra overrides...]
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from benchkit import parse_bench_args, save_result, stats

from rlrecipes.compose import compose_config

MODES = {
    "full": {"seeds": [0, 1, 2], "budget": 40.0},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "budget": 2.0},
}


def run(recipe: str, seed: int, budget: float, extra: list[str]) -> dict:
    from rlrecipes.training.job import train

    # the same wall-clock budget for every method: trainer.max_train_seconds ends each run at its
    # first rollout boundary past it (held-out measurements not counted)
    cfg = compose_config(
        "train",
        [
            f"recipe={recipe}",
            f"seed={seed}",
            "trainer.max_steps=100000",
            f"trainer.max_train_seconds={budget}",
            "trainer.progress=false",
            *extra,
        ],
    )
    with tempfile.TemporaryDirectory() as tmp:
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
    args = parse_bench_args(__file__, MODES, overrides=True)
    budget = args.budget
    results = {
        recipe: [run(recipe, seed, budget, args.overrides) for seed in args.seeds] for recipe in ("grpo", "dapo")
    }
    ds = [row for r in results["dapo"] for row in r["ds_rows"]]
    generated = sum(row["dynamic_sampling/prompts_generated"] for row in ds)
    kept = sum(row["dynamic_sampling/prompts_kept"] for row in ds)
    grpo, dapo = describe(results["grpo"]), describe(results["dapo"])
    save_result(
        args,
        {
            "budget_seconds": budget,
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
        },
    )


if __name__ == "__main__":
    main()

"""bench_build_spread: how much the quick start's GRPO gain depends on which toy build it starts from.

The stored ± of bench_quickstart is the spread over training seeds on one build (the shipped toy,
`model.toy.seed=0`). A researcher who builds the toy again (`model.toy.rebuild=true`, or a toy
config no shipped toy matches) gets another model from the same recipe: here the quick start's
GRPO run (the default `rlrecipes train`, 120 steps) is repeated on each of `--builds` toy builds
(`model.toy.seed`; seed 0 is the shipped toy, another seed is built here, ~10 minutes on 2 cores),
over the same training seeds. Records per build: the warm-start's report (steps, dev accuracy),
held-out greedy accuracy before RL, after RL per seed, and the gain in points (mean, sample stdev,
min, max); across builds, every build's mean gain and the largest difference between two of them,
beside the largest seed stdev within one build.

Usage: python benchmarks/bench_build_spread.py [--builds 0 1] [--seeds 0 1 2] [--steps 120] [key=value ...]
       --smoke: the tiny toy, two builds, one seed, two steps (the e2e tier runs it)
"""

from __future__ import annotations

import sys

from bench_quickstart import grpo_run, warm_start_report
from benchkit import parse_bench_args, save_result, stats

from rlrecipes.compose import compose_config

MODES = {
    "full": {"builds": [0, 1], "seeds": [0, 1, 2], "steps": 120},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 2},
}


def build_runs(build: int, seeds: list[int], extra: list[str]) -> dict:
    """The GRPO quick start from toy build `build` over `seeds`."""
    overrides = [f"model.toy.seed={build}", *extra]
    runs = [grpo_run(seed, overrides, lambda _model: {}) for seed in seeds]
    before, after = [round(r["accuracy_before"], 4) for r in runs], [round(r["accuracy_after"], 4) for r in runs]
    return {
        "warm_start": warm_start_report(compose_config("train", overrides)),
        **build_gain(before, after),
        "accuracy_after": after,
        "seconds": [r["seconds"] for r in runs],
    }


def build_gain(before: list[float], after: list[float]) -> dict:
    """One build's record, per training seed's accuracy before and after: the accuracies before
    (one per build, as every seed starts from the same model) and the gain in points."""
    return {
        "accuracy_before": sorted(set(before)),
        "gain_points": stats([100 * (a - b) for a, b in zip(after, before)], 2),
    }


def across(builds: dict[str, dict]) -> dict:
    means = {b: r["gain_points"]["mean"] for b, r in builds.items()}
    return {
        "gain_points_mean": means,
        "largest_difference_points": round(max(means.values()) - min(means.values()), 2),
        "largest_seed_stdev_points": max(r["gain_points"]["stdev"] for r in builds.values()),
    }


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    extra = [f"trainer.max_steps={args.steps}", *args.overrides]
    builds = {}
    for build in args.builds:
        builds[str(build)] = build_runs(build, args.seeds, extra)
        print(f"build {build}: gain {builds[str(build)]['gain_points']}", file=sys.stderr)
    save_result(args, {"steps": args.steps, "builds": builds, "across_builds": across(builds)})


if __name__ == "__main__":
    main()

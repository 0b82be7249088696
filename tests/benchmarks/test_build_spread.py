"""bench_build_spread's figures across toy builds, and the README line they give (by hand)."""

from __future__ import annotations

import bench_build_spread as bench
import readme_figures


def build(before: float, mean: float, stdev: float) -> dict:
    return {"accuracy_before": [before], "gain_points": {"mean": mean, "stdev": stdev}}


def test_the_builds_differ_by_the_gap_between_their_mean_gains():
    builds = {"0": build(0.30, 49.0, 0.3), "1": build(0.26, 45.5, 2.1)}
    assert bench.across(builds) == {
        "gain_points_mean": {"0": 49.0, "1": 45.5},
        "largest_difference_points": 3.5,
        "largest_seed_stdev_points": 2.1,
    }
    record = {"result": {"builds": builds, "across_builds": bench.across(builds)}}
    assert readme_figures.build_spread_headline(record) == (
        "GRPO gain build 0 (held-out 0.30 before) +49.0 ± 0.3 points; build 1 (held-out 0.26 before) +45.5 ± 2.1 "
        "points: builds differ by 3.5 points, seeds within one by up to 2.1 (stdev)"
    )

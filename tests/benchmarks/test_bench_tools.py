"""bench_tools' spread across toy builds, and the README line that quotes it (by hand)."""

from __future__ import annotations

import bench_tools as bench
import pytest
import readme_figures


def arm(before: float, after: list[float]) -> dict:
    return {"accuracy_before": [before] * len(after), "accuracy_after": after}


def test_each_build_records_its_headline_gain_and_how_far_the_builds_lie_apart():
    # build 0: gains 20, 30, 25 (mean 25, sd 5); build 1: gains 10, 20, 15 (mean 15, sd 5)
    spread = bench.spread_over_builds(arm(0.5, [0.7, 0.8, 0.75]), {1: arm(0.4, [0.5, 0.6, 0.55])})
    assert spread["builds"] == {
        "0": {"accuracy_before": [0.5], "gain_points": {"mean": 25.0, "stdev": 5.0, "min": 20.0, "max": 30.0}},
        "1": {"accuracy_before": [0.4], "gain_points": {"mean": 15.0, "stdev": 5.0, "min": 10.0, "max": 20.0}},
    }
    assert spread["across_builds"] == {
        "gain_points_mean": {"0": 25.0, "1": 15.0},
        "largest_difference_points": 10.0,
        "largest_seed_stdev_points": 5.0,
    }
    line = readme_figures.tool_builds({"tir_toy": {"arm": "tool", **spread}})
    assert line == (
        "; across toy builds: tir_toy tool build 0 +25.0 ± 5.0 points, build 1 +15.0 ± 5.0 points "
        "(builds apart by 10.0, seeds by up to 5.0 stdev)"
    )


def test_a_record_from_one_build_quotes_no_spread():
    assert readme_figures.tool_builds(None) == ""


def test_an_arm_right_on_nothing_before_or_after_is_labelled_so():
    silent = {**arm(0.0, [0.0, 0.0]), "gain_points_mean": 0.0, "accuracy_after_stats": {"mean": 0.0, "stdev": 0.0}}
    assert readme_figures.tool_arm(silent).endswith(
        " [nothing learned: right on no held-out problem before or after RL]"
    )
    learned = {
        **arm(0.0, [0.0, 0.01]),
        "gain_points_mean": 0.5,
        "accuracy_after_stats": {"mean": 0.005, "stdev": 0.007},
    }
    assert "nothing learned" not in readme_figures.tool_arm(learned)


def test_a_runs_model_is_named_by_its_content_not_its_folder(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.safetensors").write_bytes(b"weights")
        (tmp_path / name / "rlrecipes_content.sha256").write_text(name)  # the cache's own record: not content
    (tmp_path / "c" / "model.safetensors").write_bytes(b"weightz")  # one byte flipped
    a, b, c = (bench.model_identity(tmp_path / n) for n in ("a", "b", "c"))
    assert a == b != c and len(a) == 16
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no model files"):
        bench.model_identity(tmp_path / "empty")


def test_a_control_capped_by_construction_says_its_ceiling():
    # 3 of 4 held-out questions are 1-hop: rag_once can be right on at most those
    held_out = [{"hops": 1}, {"hops": 2}, {"hops": 1}, {"hops": 1}]
    capped = bench.ceiling("search_r1_toy", "rag_once", held_out)
    assert capped == {"accuracy": 0.75, "why": bench.CEILING_WHY[("search_r1_toy", "rag_once")]}
    assert bench.ceiling("search_r1_toy", "search", held_out) is None
    rag = {**arm(0.4, [0.45, 0.5]), "gain_points_mean": 7.5, "accuracy_after_stats": {"mean": 0.475, "stdev": 0.035}}
    rag["ceiling"] = capped
    assert readme_figures.tool_arm(rag).endswith(
        " [its ceiling 0.75: one retrieval with the question never finds a 2-hop answer: at most the 1-hop share]"
    )
    assert "ceiling" not in readme_figures.tool_arm({**rag, "ceiling": None})


def test_the_fact_bases_held_out_questions_are_half_1hop():
    held_out = bench.held_out_questions("search_r1_toy", [])
    assert len(held_out) == 200 and bench.ceiling("search_r1_toy", "rag_once", held_out)["accuracy"] == 0.5

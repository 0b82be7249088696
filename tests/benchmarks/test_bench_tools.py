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
    assert len(bench.held_out_questions("tir_toy", [])) == 300  # conf/experiment/tir_toy.yaml's num_eval


def test_a_tool_papers_readme_line_has_the_gains_spread_labels_held_out_size_and_builds():
    # search: gains 30, 40 (mean 35, sd 7.07); rag_once: 0 and -1 (mean -0.5, sd 0.71), capped at 0.5
    search = {**arm(0.5, [0.8, 0.9]), "em_2hop_stats": {"mean": 0.7, "stdev": 0.1}}
    rag = {**arm(0.5, [0.5, 0.49]), "em_2hop_stats": {"mean": 0.0, "stdev": 0.0}}
    rag["ceiling"] = {"accuracy": 0.5, "why": "at most the 1-hop share"}
    spread = bench.spread_over_builds(search, {1: arm(0.5, [0.9, 0.9])})
    record = {
        "result": {
            "heldout": {"search_r1_toy": 200},
            "toys": {"search_r1_toy": {"search": search, "rag_once": rag}},
            "builds": {"search_r1_toy": {"arm": "search", **spread}},
        }
    }
    assert readme_figures.search_headline(record) == (
        "held-out exact match gain in points (2-hop exact match after RL), 200 held-out: "
        "search +35.0 ± 7.1 (2-hop 0.70 ± 0.10), rag once -0.5 ± 0.7 (2-hop 0.00 ± 0.00) "
        "[its ceiling 0.50: at most the 1-hop share]; across toy builds: search_r1_toy search build 0 "
        "+35.0 ± 7.1 points, build 1 +40.0 ± 0.0 points (builds apart by 5.0, seeds by up to 7.1 stdev)"
    )

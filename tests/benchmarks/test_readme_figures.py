"""The README's bench table is what benchmarks/readme_figures.py renders from the stored results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import readme_figures
from benchkit import bench_name

BENCHMARKS = Path(readme_figures.__file__).resolve().parent


def record(result: dict, **extra) -> dict:
    return {
        "bench": "grading_bounds",
        "mode": "full",
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "commit_dirty": False,
        "date": "2026-12-04T19:00:00+00:00",
        "machine": {"cpus": 2, "load_average": [3.0, 2.46, 1.5]},
        "wall_seconds": 60.0,
        "settings": {"items": 600, "pairs": 4},
        "overrides": [],
        "seeds": None,
        "result": result,
        **extra,
    }


BOUNDS = {
    "items": 600,
    "bounded_aps": 1293.4,
    "unbounded_aps": 1302.6,
    "ratio_bounded_vs_unbounded": 0.993,
    "megabyte_seconds_bounded": {"newline_run_in_box": 0.21, "unclosed_boxes": 1.46, "million_digits": 0.3},
}


def stored(tmp_path: Path, name: str, rec: dict) -> Path:
    (tmp_path / f"{name}.json").write_text(json.dumps(rec))
    return tmp_path


def test_the_readme_table_is_the_one_rendered_from_the_stored_results():
    problems = readme_figures.differences(readme_figures.README.read_text())
    assert not problems, "run `python benchmarks/readme_figures.py --write`:\n" + "\n".join(problems)


def test_a_stored_result_is_quoted_with_its_commit(tmp_path):
    row = next(r for r in readme_figures.ROWS if r.bench == "grading_bounds")
    line = readme_figures.render_row(row, record(BOUNDS))
    cells = line.split(" | ")
    assert cells[2] == ("0.993 (1293 vs 1303 answers/s); megabyte degenerate responses 0.2–1.5 s each with the bounds")
    assert cells[3] == "`0123456`, 2026-12-04, 2 cores, load 2.5 |"


def test_a_bench_without_a_result_is_listed_and_quotes_no_figure(tmp_path):
    results = stored(tmp_path, "grading_bounds", record(BOUNDS))
    assert "grading_bounds" not in readme_figures.unmeasured(results)
    assert set(readme_figures.unmeasured(results)) == {r.bench for r in readme_figures.ROWS} - {"grading_bounds"}
    table = readme_figures.render_table(results)
    quickstart = next(line for line in table if line.startswith("| `bench_quickstart`"))
    assert quickstart.endswith(f"| {readme_figures.UNMEASURED} | – |")


def test_a_readme_figure_that_disagrees_with_its_result_file_is_reported(tmp_path):
    results = stored(tmp_path, "grading_bounds", record(BOUNDS))
    readme = "intro\n\n" + "\n".join(readme_figures.render_table(results)) + "\n\nmore\n"
    assert readme_figures.differences(readme, results) == []
    stale = readme.replace("0.993 (1293", "0.97 (1293")
    problems = readme_figures.differences(stale, results)
    assert len(problems) == 2 and "0.97 (1293" in problems[0] and "0.993 (1293" in problems[1]
    rerun = stored(tmp_path, "grading_bounds", record({**BOUNDS, "ratio_bounded_vs_unbounded": 0.95}))
    assert readme_figures.differences(readme, rerun)  # a new result with the README not rewritten


def test_a_scratch_run_in_the_results_folder_is_refused(tmp_path):
    results = stored(tmp_path, "grading_bounds", record(BOUNDS, mode="smoke"))
    with pytest.raises(SystemExit, match="smoke"):
        readme_figures.render_table(results)


# benches whose README row comes with their first stored result (the atlas: docs/atlas.md's Results)
NO_ROW_YET = {"atlas"}


def test_every_bench_has_a_row_and_every_row_a_bench():
    scripts = {bench_name(p) for p in BENCHMARKS.glob("bench_*.py")} - NO_ROW_YET
    assert {row.bench for row in readme_figures.ROWS} == scripts


def test_pass_at_k_is_quoted_compactly_with_its_protocol():
    before = {"pass@1": 0.25, "pass@4": 0.7857, "pass@8": 1.0}
    assert readme_figures.pass_ks(before) == ".25/.79/1.00"
    after = {"pass@1": {"mean": 0.3, "stdev": 0.1}, "pass@4": {"mean": 0.5, "stdev": 0.1}}  # per-k stats: means
    assert readme_figures.pass_ks(after) == ".30/.50"
    setting = {"problems": 300, "samples": 8, "temperature": 0.6}
    assert readme_figures.pass_protocol(setting, before) == "pass@1/4/8 (T=0.6, 300 problems × 8 samples)"


def test_the_readme_headlines_are_the_ones_rendered_from_the_stored_results():
    problems = readme_figures.headline_differences(readme_figures.FRONT_PAGE.read_text())
    assert not problems, "run `python benchmarks/readme_figures.py --write`:\n" + "\n".join(problems)


def test_a_headline_is_rendered_between_its_markers_with_its_commit(tmp_path):
    dapo = record({"dapo_minus_grpo_points": -2.46, "budget_seconds": 40.0}, bench="dapo", seeds=[0, 1, 2], settings={})
    results = stored(tmp_path, "dapo", dapo)
    text = "DAPO: <!-- bench:dapo -->old figure<!-- /bench -->; spurious: <!-- bench:spurious --><!-- /bench -->"
    assert readme_figures.with_headlines(text, results) == (
        "DAPO: <!-- bench:dapo -->DAPO − GRPO -2.5 points at 40 s each (`0123456`, 3 seeds)<!-- /bench -->; "
        f"spurious: <!-- bench:spurious -->{readme_figures.UNMEASURED}<!-- /bench -->"
    )
    assert readme_figures.headline_differences(text, results) == [
        "README.md dapo: 'old figure' should be 'DAPO − GRPO -2.5 points at 40 s each (`0123456`, 3 seeds)'",
        f"README.md spurious: '' should be {readme_figures.UNMEASURED!r}",
    ]
    with pytest.raises(SystemExit, match="bench:dapo_v2 --> names no headline; valid: quickstart"):
        readme_figures.with_headlines("<!-- bench:dapo_v2 --><!-- /bench -->", results)


def test_the_dapo_headline_carries_the_spread_of_its_paired_seeds():
    # per seed DAPO - GRPO: -4.0, +4.33, -1.67 points; mean -0.44, stdev 4.33
    result = {
        "dapo_minus_grpo_points": -0.44,
        "budget_seconds": 40.0,
        "dapo": {"accuracy_after": [0.8333, 0.9, 0.8733]},
        "grpo": {"accuracy_after": [0.8733, 0.8567, 0.89]},
    }
    assert readme_figures.dapo_headline({"result": result}) == "DAPO − GRPO -0.4 ± 4.3 points at 40 s each"


def test_the_curriculum_row_quotes_accuracy_overall_and_at_the_most_distractors():
    s = lambda mean, stdev: {"mean": mean, "stdev": stdev}  # noqa: E731
    arm = lambda a, b: {"overall": s(a, 0.01), "by_distractors": {"0": s(1.0, 0.0), "8": s(b, 0.02)}}  # noqa: E731
    result = {
        "most_distractors": "8",
        "toy": {"overall": 0.4, "by_distractors": {"0": 1.0, "8": 0.06}},
        "arms": {"warmup": arm(0.41, 0.07), "curriculum": arm(0.45, 0.1), "longest": arm(0.43, 0.09)},
    }
    rec = {**record(result), "bench": "curriculum", "seeds": [0, 1, 2]}
    assert readme_figures.curriculum(rec) == (
        "greedy accuracy all / 8 distractors: short → long 0.450 ± 0.010 / 0.100 ± 0.020; longest from the start "
        "0.430 ± 0.010 / 0.090 ± 0.020; warm-up 0.410 ± 0.010 / 0.070 ± 0.020; toy 0.400 / 0.060 (3 seeds)"
    )
    arithmetic = {**rec, "result": {"longest_bucket": "7", "arms": {}}}  # the record before long documents
    assert "not yet measured on long documents" in readme_figures.curriculum(arithmetic)


def doctor_record(lead):
    half = {
        "faulty_runs": 30,
        "healthy_runs": 36,
        "recall": 0.9333,
        "recall_per_class": {c: {} for c in ("drift", "numeric", "truncation")},
        "false_alarm_rate": 0.0278,
        "correct_cause_rate": 0.8571,
        "collapsed_runs": 9,
        "median_warning_lead_steps": lead,
    }
    runs = [{"seed": s} for s in (100, 101, 103, 105)]
    return {**record({"report_half": half, "runs": runs}), "bench": "doctor", "seeds": [100, 101, 103, 105]}


def test_the_held_out_doctor_row_quotes_every_seed():
    rec = doctor_record(12)
    rec["result"]["held_out"] = rec["result"].pop("report_half")
    assert readme_figures.doctor_heldout(rec) == (
        "on seeds 100, 101, 103, 105: recall 93% over 30 faulty runs (3 classes), false alarms 3% of 36 "
        "healthy runs, correct cause 86%; the first warning 12 steps before the reward collapsed (median of 9 runs)"
    )
    rec["result"]["held_out"]["warned_collapsed_runs"] = 8
    assert "(median of the 8 warned of 9)" in readme_figures.doctor_heldout(rec)
    rec["result"]["held_out"] = None
    with pytest.raises(SystemExit, match="judge it with --held-out"):
        readme_figures.doctor_heldout(rec)


def test_the_doctor_row_quotes_the_report_half_and_says_which_side_of_the_collapse_it_warned():
    assert readme_figures.doctor(doctor_record(-3.5)) == (
        "on the report seeds (101, 103, 105): recall 93% over 30 faulty runs (3 classes), false alarms 3% of 36 "
        "healthy runs, correct cause 86%; the first warning 3.5 steps after the reward collapsed (median of 9 runs)"
    )
    assert readme_figures.doctor(doctor_record(2)).endswith(
        "the first warning 2 steps before the reward collapsed (median of 9 runs)"
    )
    assert readme_figures.doctor(doctor_record(1)).endswith(
        "the first warning 1 step before the reward collapsed (median of 9 runs)"
    )
    assert readme_figures.doctor(doctor_record(0)).endswith(
        "the first warning at the step the reward collapsed (median of 9 runs)"
    )
    assert readme_figures.doctor(doctor_record(None)).endswith("; no run collapsed")
    live = doctor_record(2)
    live["result"]["report_half"]["live_false_alarm_rate"] = 0.0556
    assert "false alarms 3% of 36 healthy runs (6% warned during training), correct cause" in readme_figures.doctor(
        live
    )
    live["result"]["report_half"]["smollm2"] = {
        "faulty_runs": 3,
        "found": 2,
        "healthy_runs": 1,
        "false_alarms": 0,
        "live_false_alarms": 1,
    }
    assert (
        "correct cause 86%; of these, SmolLM2-135M with LoRA: 2 of 3 faults found, 0 of 1 healthy alarmed "
        "(1 warned during training); the first warning"
    ) in readme_figures.doctor(live)
    roomy = doctor_record(0)
    roomy["result"]["report_half"].update(
        median_warning_lead_steps_after_target=37.5, collapsed_after_target_runs=3, lead_target_steps=20
    )
    assert readme_figures.doctor(roomy).endswith(
        "the first warning at the step the reward collapsed (median of 9 runs), 37.5 steps before it in the 3 "
        "that collapsed after step 20"
    )
    roomy["result"]["report_half"]["median_warning_lead_steps_if_warned_at_step_1"] = 25.5
    roomy["result"]["report_half"]["warned_collapsed_runs"] = 9
    assert readme_figures.doctor(roomy).endswith(
        "the first warning at the step the reward collapsed (median of 9 runs; at most 25.5 steps possible, a "
        "warning at step 1 in each), 37.5 steps before it in the 3 that collapsed after step 20"
    )

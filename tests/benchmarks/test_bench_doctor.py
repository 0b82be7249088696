"""bench_doctor's figures on hand-made run records (no training): recall per class, false alarms,
correct cause in the doctor's order, the warning's lead over a collapse, and the collapse step."""

from __future__ import annotations

import json

import bench_doctor as bench
import pytest


def rec(case, seed, found, live=(), collapse=None):
    expected = None if case.startswith("healthy/") else case.split("/")[0]
    return {
        "case": case,
        "seed": seed,
        "expected": expected,
        "found": list(found),
        "live": list(live),
        "collapse_step": collapse,
    }


def test_figures_by_hand():
    records = [
        rec("truncation/limit", 1, ["truncation"]),  # found, right cause
        rec(
            "numeric/reward_outlier",
            1,
            ["entropy-blowup", "numeric"],
            live=[(4, "numeric"), (9, "entropy-blowup")],
            collapse=12,
        ),
        rec("drift/kl", 1, ["no-signal", "drift"]),  # found, but no-signal comes first in the doctor's order
        rec("drift/kl", 3, []),  # missed
        rec("healthy/grpo", 1, []),
        rec("healthy/dapo", 1, ["no-signal"]),  # a false alarm
        rec("healthy/rloo", 1, [], live=[(6, "no-signal"), (9, "truncation")]),  # said live only: an alarm too
        rec("healthy/gspo", 1, []),
    ]
    f = bench.figures(records)
    assert (f["faulty_runs"], f["healthy_runs"]) == (4, 4)
    assert f["recall"] == 0.75 and f["false_alarm_rate"] == 0.25
    assert f["recall_per_class"]["drift"] == {"runs": 2, "found": 1, "recall": 0.5}
    # numeric/reward_outlier: numeric precedes entropy-blowup in the doctor's order
    assert f["correct_cause_rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert f["wrong_causes"] == ["drift/kl seed 1: no-signal"]
    assert f["missed"] == ["drift/kl seed 3: found nothing"]
    assert f["false_alarms"] == ["healthy/dapo seed 1: no-signal"]
    assert f["live_false_alarm_rate"] == 0.25
    assert f["live_false_alarms"] == ["healthy/rloo seed 1: no-signal at step 6, truncation at step 9"]
    assert f["collapsed_runs"] == 1 and f["median_warning_lead_steps"] == 8  # collapse 12, first warning 4
    assert f["smollm2"] is None  # no SmolLM2 case among them
    # a collapse at step 12 leaves no room for a 20-step lead: none counts after the target
    assert f["collapsed_after_target_runs"] == 0 and f["median_warning_lead_steps_after_target"] is None
    assert f["healthy_preflight_probes"] == 0 and f["healthy_preflight_empty_share_max"] is None


def test_the_healthy_runs_first_rollouts_are_summed_up_where_their_probe_was_kept():
    probed = [
        {**rec("healthy/grpo", 1, []), "preflight": {"empty_share": 0.0625}},
        {**rec("healthy/dapo", 1, []), "preflight": {"empty_share": 0.0}},
        {**rec("healthy/rloo", 1, []), "preflight": None},  # a record from before probes were kept
        {**rec("format/wrong_template", 1, ["format"]), "preflight": {"empty_share": 0.8125}},  # not healthy
    ]
    f = bench.figures(probed)
    assert f["healthy_preflight_probes"] == 2 and f["healthy_preflight_empty_share_max"] == 0.0625
    # a NaN or a bool is no share: max() over them would depend on their order
    assert (
        bench._probed(
            [{"preflight": {"empty_share": float("nan")}}, {"preflight": {"empty_share": True}}], "empty_share"
        )
        == []
    )


def test_the_judged_record_keeps_the_runs_preflight_probe(tmp_path):
    from tests.doctor.rundirs import make_run, rows

    run = make_run(tmp_path / "run", rows())
    (run / "preflight.json").write_text(json.dumps({"probe": {"empty_share": 0.0}, "refusal": None}))
    assert bench.judge(bench.Case("healthy/grpo", ()), run)["preflight"] == {"empty_share": 0.0}


def test_a_runs_preflight_probe_is_read_from_its_folder(tmp_path):
    assert bench.preflight_probe(tmp_path) is None  # none written
    (tmp_path / "preflight.json").write_text(json.dumps({"probe": {"empty_share": 0.25}, "refusal": None}))
    assert bench.preflight_probe(tmp_path) == {"empty_share": 0.25}
    (tmp_path / "preflight.json").write_text('{"probe": ')  # torn
    assert bench.preflight_probe(tmp_path) is None


def test_the_smollm2_runs_are_counted_apart_too():
    records = [
        rec("truncation/refused_smollm2", 101, ["truncation"]),
        rec("format/wrong_template_smollm2", 101, ["no-signal"]),  # missed
        rec("healthy/grpo_smollm2", 101, [], live=[(3, "no-signal")]),
        rec("healthy/grpo", 101, ["drift"]),  # a toy's false alarm: not SmolLM2's
    ]
    f = bench.figures(records)
    assert f["smollm2"] == {"faulty_runs": 2, "found": 1, "healthy_runs": 1, "false_alarms": 0, "live_false_alarms": 1}
    assert (f["faulty_runs"], f["healthy_runs"], f["false_alarm_rate"]) == (2, 2, 0.5)


def test_the_lead_after_the_target_counts_only_collapses_past_step_20():
    records = [
        rec("entropy-collapse/lr", 1, ["entropy-collapse"], live=[(2, "no-signal")], collapse=3),  # lead 1
        rec("entropy-blowup/lr", 1, ["entropy-blowup"], live=[(8, "step-size")], collapse=5),  # lead -3
        rec("entropy-blowup/lr_warmup", 1, ["entropy-blowup"], live=[(9, "step-size"), (60, "x")], collapse=47),
        rec("entropy-blowup/lr_warmup", 3, ["entropy-blowup"], live=[(12, "step-size")], collapse=21),  # lead 9
        rec("entropy-blowup/lr_warmup", 5, ["entropy-blowup"], live=[(9, "step-size")], collapse=20),  # not past 20
        rec("entropy-blowup/lr_warmup", 7, [], collapse=60),  # never warned: in no lead
    ]
    f = bench.figures(records)
    assert f["median_warning_lead_steps"] == 9  # leads -3, 1, 9, 11, 38
    assert f["collapsed_after_target_runs"] == 2 and f["median_warning_lead_steps_after_target"] == 23.5  # (38+9)/2
    # every collapse warned at step 1, the unwarned one too: collapses 3, 5, 47, 21, 20, 60 -> leads
    # 2, 4, 46, 20, 19, 59, median (19 + 20) / 2
    assert f["median_warning_lead_steps_if_warned_at_step_1"] == 19.5
    assert (f["collapsed_runs"], f["warned_collapsed_runs"]) == (6, 5)


def reward_rows(values, start=1):
    return [{"step": start + i, "reward_mean": v} for i, v in enumerate(values)]


def test_collapse_is_where_the_rewards_trailing_mean_falls_below_half_its_best_and_stays():
    # trailing means (window 5): .4 .4 .4 .4 .4 | .32 .24 .16 .08 0 0: best .4, below .2 from the 8th step on
    rows = reward_rows([0.4] * 5 + [0.0] * 6)
    assert bench.collapse_step(rows) == 8
    rows.insert(3, {"step": 3.5, "loss": 1.0})  # a row without a reward counts for nothing
    assert bench.collapse_step(rows) == 8


def test_one_bad_batch_or_a_recovery_or_a_last_dip_is_no_collapse():
    assert bench.collapse_step(reward_rows([0.4, 0.45, 0.0, 0.4, 0.42, 0.38, 0.4, 0.41])) is None  # one batch
    assert bench.collapse_step(reward_rows([0.4] * 5 + [0.0] * 5 + [0.8] * 5)) is None  # it recovered
    assert bench.collapse_step(reward_rows([0.4] * 5 + [0.0] * 4)) is None  # below from the 8th: 2 steps only
    assert bench.collapse_step([]) is None


def test_every_case_names_a_doctor_class_and_the_smoke_cases_exist():
    from rlrecipes.doctor.diagnose import ORDER
    from rlrecipes.doctor.preflight import REFUSAL_CLASSES

    assert all(c.expected in (None, *ORDER, *REFUSAL_CLASSES) and set(c.also) <= set(ORDER) for c in bench.CASES)
    names = [c.name for c in bench.CASES]
    assert len(set(names)) == len(names) and set(bench.SMOKE_CASES) <= set(names)
    assert {c.expected for c in bench.CASES} - {None} == {n.split("/")[0] for n in names if not n.startswith("healthy")}


def test_every_case_is_a_run_the_planner_accepts():
    """A case whose settings the planner refuses would be recorded as a run that never trained."""
    from rlrecipes.compose import compose_config
    from rlrecipes.training.plan import plan_run

    for case in bench.CASES:
        plan_run(compose_config("train", [*case.overrides, "trainer.max_steps=30"]), hardware=False)


def test_the_too_hard_sums_have_four_digit_operands():
    train, held_out = bench.ZOO_DATA["four_digit_sums"]()
    assert (len(train), len(held_out)) == (3000, 300)
    for row in train + held_out:
        a, b = row["problem"].split("+")
        assert len(a) == len(b) == 4 and row["answer"] == str(int(a) + int(b))


def test_a_case_plants_its_dataset_and_its_length():
    """A kept run counts only while its case plants the same: a dataset or a longer run is part of it."""
    assert bench.planted(bench.Case("healthy/grpo", ("recipe=dapo",))) == ["recipe=dapo"]
    late = bench.Case("a/b", ("x=1",), "a", fault="f", data="four_digit_sums", late=True)
    assert bench.planted(late) == ["x=1", "fault=f", "data=four_digit_sums", f"steps x{bench.LATE_FACTOR}"]
    assert bench.planted(bench.Case("a/b", ("x=1",), "a", steps=10)) == ["x=1", "steps=10"]


def test_a_case_trains_its_own_steps_or_the_modes_or_late_factor_times_them():
    assert bench.case_steps(bench.Case("a/b", ()), 30) == 30
    assert bench.case_steps(bench.Case("a/b", (), late=True), 30) == 30 * bench.LATE_FACTOR
    assert bench.case_steps(bench.Case("a/b", (), steps=10), 30) == 10


def test_a_case_on_a_few_report_seeds_runs_on_the_first_odd_ones_in_the_given_order():
    few = bench.Case("a/b", (), "a", report_seeds=1)
    seeds = [100, 103, 101, 102]
    assert [s for s in seeds if bench.in_seeds(few, s, seeds)] == [103]
    two = bench.Case("a/b", (), "a", report_seeds=2)
    assert [s for s in seeds if bench.in_seeds(two, s, seeds)] == [103, 101]
    assert [s for s in seeds if bench.in_seeds(bench.Case("a/b", (), "a"), s, seeds)] == seeds


def test_the_smollm2_cases_train_their_own_steps_healthy_on_every_report_seed_faults_on_one():
    smollm2 = {c.name: c for c in bench.CASES if c.name.endswith("_smollm2")}
    assert {name.split("/")[0] for name in smollm2} == {"healthy", "truncation", "format", "step-size"}
    assert all(c.steps == bench.SMOLLM2_STEPS for c in smollm2.values())
    assert all("experiment=real_model_smollm2" in c.overrides for c in smollm2.values())
    assert {name: c.report_seeds for name, c in smollm2.items() if c.report_seeds != 1} == {"healthy/grpo_smollm2": 3}


def test_the_full_zoo_has_ten_classes_sixty_faulty_runs_and_as_many_healthy_ones():
    seeds = bench.MODES["full"]["seeds"]
    runs = [c for c in bench.CASES for seed in seeds if bench.in_seeds(c, seed, seeds)]
    faulty = [c for c in runs if c.expected]
    assert len({c.expected for c in faulty}) >= 10 and len(faulty) >= 60
    assert len(runs) - len(faulty) >= len(faulty)


def test_a_zoo_dataset_is_written_into_the_run_and_read_from_there(tmp_path):
    overrides = bench.data_overrides("four_digit_sums", tmp_path / "data")
    assert overrides == [
        "data.source=file",
        f"data.path={tmp_path / 'data' / 'train.jsonl'}",
        f"data.eval_path={tmp_path / 'data' / 'heldout.jsonl'}",
    ]
    rows = [json.loads(line) for line in (tmp_path / "data" / "heldout.jsonl").read_text().splitlines()]
    assert rows == bench.ZOO_DATA["four_digit_sums"]()[1]


# ------------------------------------------------------------------ the kept zoo and its replay
def test_the_live_warnings_are_replayed_at_the_step_the_live_doctor_said_them(tmp_path):
    from rlrecipes.doctor.reading import RunRecord

    rows = [{"step": s, "loss": 0.1, "grad_norm": 1.0} for s in (1, 2, 3)]
    rows += [{"step": 4, "loss": float("nan"), "grad_norm": 1.0}, {"step": 5, "loss": 0.1, "grad_norm": 1.0}]
    record = RunRecord(tmp_path, rows, {}, {"doctor": []}, "train", [])
    assert bench.replay_live(record) == [(4, "numeric")]


def fake_child(calls: list):
    def run_in_child(case, seed, steps, base, timeout_s, run):
        calls.append((case.name, seed, run.name))
        run.mkdir(parents=True)
        return {"case": case.name, "seed": seed, "expected": case.expected, "run": run.name, "found": [], "live": []}

    return run_in_child


def test_a_rerun_continues_the_kept_zoo_and_retrains_only_a_case_that_changed(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "run_in_child", fake_child(calls))
    argv = ["--cases", "healthy/grpo", "healthy/dapo", "--seeds", "100", "--results-dir", str(tmp_path)]
    bench.main(argv)
    assert calls == [("healthy/grpo", 100, "healthy-grpo_s100"), ("healthy/dapo", 100, "healthy-dapo_s100")]
    bench.main(argv)  # everything kept: nothing trains again
    assert len(calls) == 2
    changed = [
        bench.Case("healthy/dapo", ("recipe=dapo", "recipe.beta=0.01")) if c.name == "healthy/dapo" else c
        for c in bench.CASES
    ]
    monkeypatch.setattr(bench, "CASES", changed)
    bench.main(argv)  # the case plants something else now: its kept run is not its run, a new folder is
    assert calls[2:] == [("healthy/dapo", 100, "healthy-dapo_s100-2")]
    record = json.loads((tmp_path / "doctor.json").read_text())
    assert [r["run"] for r in record["result"]["runs"]] == ["healthy-grpo_s100", "healthy-dapo_s100-2"]


def test_a_smollm2_case_trains_on_its_report_seeds_and_is_refused_without_its_model(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(bench, "run_in_child", fake_child(calls))
    monkeypatch.setattr(bench, "smollm2_missing", lambda: None)
    argv = ["--cases", "healthy/grpo_smollm2", "--seeds", "100", "101", "102", "103", "--results-dir", str(tmp_path)]
    bench.main(argv)
    assert [(name, seed) for name, seed, _ in calls] == [("healthy/grpo_smollm2", 101), ("healthy/grpo_smollm2", 103)]
    monkeypatch.setattr(bench, "smollm2_missing", lambda: "vLLM is not installed")
    bench.main(argv)  # kept: nothing to train, nothing missing
    bench.main([*argv, "--rediagnose"])
    bench.main(["--cases", "healthy/grpo_smollm2", "--seeds", "100", "--results-dir", str(tmp_path / "even")])
    assert len(calls) == 2  # no report seed: the case has no run to train
    with pytest.raises(SystemExit, match=r"the SmolLM2 cases \(healthy/grpo_smollm2\) need .*: vLLM is not installed"):
        bench.main([*argv[:-1], str(tmp_path / "new")])


def test_rediagnose_judges_the_kept_runs_and_trains_nothing(tmp_path, monkeypatch):
    calls, judged = [], []
    monkeypatch.setattr(bench, "run_in_child", fake_child(calls))
    argv = ["--cases", "healthy/grpo", "--seeds", "100", "101", "--results-dir", str(tmp_path)]
    with pytest.raises(SystemExit, match="--rediagnose: .* has no run of healthy/grpo seed 100; run without it first"):
        bench.main([*argv, "--rediagnose"])
    bench.main(argv)
    monkeypatch.setattr(
        bench, "judge", lambda case, run: judged.append(run.name) or {"found": ["drift"], "by": "doctor"}
    )
    bench.main([*argv, "--rediagnose"])
    assert len(calls) == 2 and judged == ["healthy-grpo_s100", "healthy-grpo_s101"]
    result = json.loads((tmp_path / "doctor.json").read_text())["result"]
    assert result["report_half"]["false_alarms"] == ["healthy/grpo seed 101: drift"]
    assert result["unjudged"] == [] and all(r["judged_at"] == result["judged_at"] for r in result["runs"])
    assert result["held_out"] is None  # the zoo's own seeds: its tuning half was looked at
    bench.main([*argv, "--rediagnose", "--held-out"])
    result = json.loads((tmp_path / "doctor.json").read_text())["result"]
    # seeds no threshold was chosen on: both seeds' runs in one set of figures
    assert result["held_out"]["healthy_runs"] == 2 and result["held_out"]["false_alarm_rate"] == 1.0


def test_rediagnose_keeps_the_verdict_of_a_run_whose_folder_is_gone(tmp_path, monkeypatch):
    calls, judged = [], []
    monkeypatch.setattr(bench, "run_in_child", fake_child(calls))
    argv = ["--cases", "healthy/grpo", "--seeds", "100", "101", "--results-dir", str(tmp_path)]
    bench.main(argv)
    [zoo] = (tmp_path / "doctor-zoo").iterdir()
    for seed in (100, 101):
        (zoo / "runs" / f"healthy-grpo_s{seed}").mkdir(parents=True, exist_ok=True)
    (zoo / "runs" / "healthy-grpo_s101").rmdir()  # a zoo restored from a stored result: no folder
    monkeypatch.setattr(
        bench, "judge", lambda case, run: judged.append(run.name) or {"found": ["drift"], "by": "doctor"}
    )
    bench.main([*argv, "--rediagnose"])
    result = json.loads((tmp_path / "doctor.json").read_text())["result"]
    assert judged == ["healthy-grpo_s100"] and result["unjudged"] == ["healthy/grpo seed 101"]
    kept = next(r for r in result["runs"] if r["seed"] == 101)
    assert kept["found"] == [] and "judged_at" not in kept  # as trained and judged then
    assert result["report_half"]["false_alarms"] == [] and result["tuning_half"]["false_alarms"] == [
        "healthy/grpo seed 100: drift"
    ]

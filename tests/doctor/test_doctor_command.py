"""`rlrecipes doctor` as users run it: the printed verdict, exit codes, --json, and runs it can
only partly read (a torn line, an older run, a sweep with a failed job, a stages parent)."""

from __future__ import annotations

import json
import math

from tests.conftest import cli, one_error_line
from tests.doctor.rundirs import make_run, rows


def truncated(tmp_path, name="run", **run):
    return make_run(tmp_path / name, rows({"truncated_fraction": [0.1] * 8 + [0.9, 0.9]}), **run)


def test_a_healthy_run_exits_0(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(make_run(tmp_path / "run", rows())))
    assert code == 0, text
    assert text.splitlines()[0] == f"{tmp_path / 'run'}: healthy (9 checks on steps 1-10)"


def test_a_finding_exits_1_with_evidence_cause_and_the_command_that_fixes_it(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(truncated(tmp_path)))
    assert code == 1, text
    lines = text.splitlines()
    assert lines[0].endswith("run: 1 finding (9 checks on steps 1-10)")
    assert lines[1] == "  x truncation near 1 (truncation)"
    assert lines[2] == "    truncated_fraction 0.1 (steps 1-2) -> 0.9 (steps 9-10)"
    assert any(line.startswith("    cause: most completions hit trainer.max_completion_length=16") for line in lines)
    assert "    fix: trainer.max_completion_length=32" in lines
    # the command line stays whole (it copies as one); everything else fits 80 columns
    command = "      rlrecipes train recipe=grpo trainer.max_steps=10 trainer.max_completion_length=32"
    assert command in lines
    assert all(len(line) <= 80 for line in lines if line != command and str(tmp_path) not in line), text


def test_json_lists_each_run_with_its_findings(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(truncated(tmp_path)), "--json")
    assert code == 1
    out = json.loads(text)
    assert out["exit_code"] == 1 and len(out["runs"]) == 1
    run = out["runs"][0]
    assert (run["run"], run["verdict"], run["steps"], run["reason"]) == (
        str(tmp_path / "run"),
        "findings",
        [1, 10],
        None,
    )
    assert [c["class"] for c in run["not_applicable"]] == ["rollout-mismatch", "tool-loop"]
    assert run["not_checked"] == [] and run["notes"] == []
    [finding] = run["findings"]
    assert set(finding) == {"class", "title", "metric", "steps", "evidence", "cause", "fix", "command", "sample"}
    assert (finding["class"], finding["metric"], finding["steps"]) == ("truncation", "truncated_fraction", [9, 10])
    assert finding["fix"] == "trainer.max_completion_length=32"


def test_json_of_a_healthy_run_exits_0(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(make_run(tmp_path / "run", rows())), "--json")
    assert code == 0 and json.loads(text)["runs"][0]["verdict"] == "healthy"


def test_a_run_without_metrics_is_one_line_and_exit_2(tmp_path, capsys):
    run = make_run(tmp_path / "run", None, finished=False)
    code, text = cli(capsys, "doctor", str(run))
    assert code == 2
    assert one_error_line(text) == (
        f"error: {run / 'metrics.jsonl'}: missing; the run logged no step (it failed or was stopped "
        "before its first one, or is starting): nothing to check"
    )


def test_a_run_the_preflight_refused_says_the_refusal(tmp_path, capsys):
    run = make_run(tmp_path / "run", None, finished=False)
    refusal = "pre-flight: all 64 completions of the first rollout were cut at trainer.max_completion_length=5"
    (run / "preflight.json").write_text(json.dumps({"probe": {}, "refusal": refusal, "warnings": []}))
    code, text = cli(capsys, "doctor", str(run))
    assert code == 2
    assert one_error_line(text) == f"error: {run}: refused before its first update, nothing trained: {refusal}"
    (run / "preflight.json").write_text(json.dumps({"probe": {}, "refusal": None, "warnings": ["w"]}))
    code, text = cli(capsys, "doctor", str(run))  # judged and let through, then stopped: no refusal to say
    assert "metrics.jsonl: missing" in one_error_line(text)


def test_a_path_without_runs_is_one_line_and_exit_2(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(tmp_path / "nowhere"))
    assert code == 2 and one_error_line(text) == f"error: {tmp_path / 'nowhere'}: no such run directory"


def test_a_torn_last_line_is_ignored_and_said(tmp_path, capsys):
    # killed while writing step 11: the verdict is on steps 1-10, and says so
    run = make_run(tmp_path / "run", rows(), torn='{"step": 11, "loss": 0.0', finished=False)
    code, text = cli(capsys, "doctor", str(run))
    assert code == 0, text
    flat = " ".join(text.split())
    assert "healthy (9 checks on steps 1-10)" in flat
    assert f"note: {run / 'metrics.jsonl'}: its last line (11) is torn (killed while writing it?): ignored; " in flat
    assert "checked up to step 10" in flat
    assert "note: no summary.json: the run stopped (killed, crashed) or is still running" in flat


def test_records_whose_step_is_no_whole_number_are_left_out_and_said(tmp_path, capsys):
    # a hand-edited or foreign log: steps 1.5, inf (1e999), 10**400 (past the float range), -2, "3", true and
    # null are no training steps
    odd = [{"step": 1.5}, {"step": 1e999}, {"step": 10**400}, {"step": -2}, {"step": "3"}, {"step": True}]
    odd += [{"step": None}, {"event": "x"}]
    run = make_run(tmp_path / "run", rows()[:5] + odd + rows()[5:])
    code, text = cli(capsys, "doctor", str(run))
    assert code == 0, text
    flat = " ".join(text.split())
    assert "healthy (9 checks on steps 1-10)" in flat
    assert f"note: {run / 'metrics.jsonl'}: records whose step is no whole number of 0 or more (7): ignored" in flat
    # none left: said as such, not as a log with no step yet
    code, text = cli(capsys, "doctor", str(make_run(tmp_path / "odd", odd)))
    assert code == 2 and one_error_line(text) == (
        f"error: {tmp_path / 'odd' / 'metrics.jsonl'}: 7 records, none with a step that is a whole number of 0 or "
        "more (not a metrics log of rlrecipes train?): nothing to check"
    )


def test_a_step_logged_again_is_checked_as_last_logged_in_step_order(tmp_path):
    from rlrecipes.doctor.reading import read_run

    # steps 9 and 10 logged again after step 10 (a run continued by hand), step 10 twice more: the last
    # record of each is the step; written 2.0, step 2 is step 2; steps 4 and 3 swapped
    again = [{"step": 9, "loss": 0.02}, {"step": 10, "loss": 0.5}, {"step": 10.0, "loss": float("nan")}]
    metrics = rows() + again
    metrics[1] = {**metrics[1], "step": 2.0}
    metrics[2], metrics[3] = metrics[3], metrics[2]
    record = read_run(make_run(tmp_path / "run", metrics))
    assert [r["step"] for r in record.rows] == list(range(1, 11))
    assert all(type(r["step"]) is int for r in record.rows)
    assert record.rows[8] == {"step": 9, "loss": 0.02}  # the later record, not a mix of the two runs'
    assert math.isnan(record.rows[9]["loss"])
    assert record.notes[0] == (
        f"{tmp_path / 'run' / 'metrics.jsonl'}: steps logged more than once (2): each step's last record is "
        "checked (a run continued by hand, or logs joined?)"
    )


def test_an_older_run_says_which_checks_it_could_not_run(tmp_path, capsys):
    # written before entropy and the truncation share were logged
    run = make_run(tmp_path / "run", rows(drop=("entropy", "truncated_fraction")))
    code, text = cli(capsys, "doctor", str(run), "--json")
    skipped = {c["class"]: c["reason"] for c in json.loads(text)["runs"][0]["not_checked"]}
    assert code == 0
    assert skipped == {
        "truncation": "metrics.jsonl has no truncated_fraction (a run from an older version, or a recipe that "
        "does not log it)",
        "entropy-collapse": "metrics.jsonl has no entropy (a run from an older version, or a recipe that does "
        "not log it)",
        "entropy-blowup": "metrics.jsonl has no entropy (a run from an older version, or a recipe that does not log it)",
        "step-size": "metrics.jsonl has no entropy (a run from an older version, or a recipe that does not log it)",
    }
    code, text = cli(capsys, "doctor", str(run))
    flat = " ".join(text.split())
    assert (
        "not checked: updates too large for the policy, entropy collapse, entropy blow-up: metrics.jsonl has no entropy"
        in flat
    )


def test_a_short_run_says_the_trends_need_more_steps(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(make_run(tmp_path / "run", rows(steps=4))))
    assert code == 0
    assert (
        "not checked: entropy collapse, entropy blow-up, reward rising without accuracy, KL or clip-fraction "
        "drift: 4 logged steps; comparing the end with the start needs 10"
    ) in " ".join(text.split())


def test_a_sweep_gets_one_verdict_per_run_and_one_line_for_its_failed_job(tmp_path, capsys):
    sweep = tmp_path / "multirun" / "2026-01-01_00-00-00"
    make_run(sweep / "0-grpo-arithmetic", rows())
    truncated(sweep, "1-grpo-arithmetic")
    make_run(sweep / "2-grpo-arithmetic", None, finished=False)  # crashed before its first step
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    code, text = cli(capsys, "doctor", str(sweep))
    assert code == 1, text
    lines = text.splitlines()
    assert lines[0] == f"{sweep / '0-grpo-arithmetic'}: healthy (9 checks on steps 1-10)"
    assert f"{sweep / '1-grpo-arithmetic'}: 1 finding (9 checks on steps 1-10)" in lines
    failed = [line for line in lines if line.startswith(str(sweep / "2-grpo-arithmetic"))]
    assert failed == [f"{sweep / '2-grpo-arithmetic'}: not checked: {sweep / '2-grpo-arithmetic' / 'metrics.jsonl'}: "
                      "missing; the run logged no step (it failed or was stopped before its first one, or is "
                      "starting): nothing to check"]  # fmt: skip
    assert lines[-1] == "3 runs: 1 healthy, 1 with findings, 1 not checked"


def test_a_sweep_whose_only_trouble_is_a_failed_job_exits_2(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    make_run(sweep / "0-grpo-arithmetic", rows())
    make_run(sweep / "1-grpo-arithmetic", None, finished=False)
    code, text = cli(capsys, "doctor", str(sweep), "--json")
    out = json.loads(text)
    assert code == 2 and out["exit_code"] == 2
    assert [r["verdict"] for r in out["runs"]] == ["healthy", "unreadable"]
    assert out["runs"][1]["reason"].endswith("nothing to check")


def test_a_stages_parent_checks_its_rl_stage_and_skips_its_sft_stage(tmp_path, capsys):
    parent = tmp_path / "2026-01-01_00-00-00-stages-toy_sft_grpo"
    parent.mkdir()
    (parent / "config.yaml").write_text("pipeline:\n  name: toy_sft_grpo\n  stages: []\n")
    (parent / "versions.json").write_text(json.dumps({"command": "rlrecipes stages"}))
    prime = make_run(parent / "1-prime", [{"step": 60, "loss": 1.3}], config={"sft.batch_size": 8})
    truncated(parent, "2-rl")
    code, text = cli(capsys, "doctor", str(parent))
    assert code == 1, text
    assert f"{prime}: skipped: an SFT run: the doctor checks RL runs (rlrecipes train)" in text.splitlines()
    assert f"{parent / '2-rl'}: 1 finding (9 checks on steps 1-10)" in text.splitlines()


def test_a_run_without_recorded_overrides_leaves_them_to_the_user(tmp_path, capsys):
    code, text = cli(capsys, "doctor", str(truncated(tmp_path, overrides=None)))
    assert code == 1
    assert "      rlrecipes train ... trainer.max_completion_length=32" in text.splitlines()


def test_a_torn_summary_is_said_in_the_verdict(tmp_path, capsys):
    run = make_run(tmp_path / "run", rows())
    (run / "summary.json").write_text('{"recipe": "gr')
    code, text = cli(capsys, "doctor", str(run))
    assert code == 2
    assert "summary.json: not valid JSON" in one_error_line(text)


LIVE = {"step": 6, "class": "no-signal", "evidence": "frac_groups_zero_std 1 (steps 1-6)", "fix": "data=harder"}


def test_what_the_live_doctor_said_and_the_whole_run_does_not_find_is_a_note(tmp_path, capsys):
    odd = ["torn", {"class": "no-such"}, {"step": 3}, {"class": ["no-signal"]}, {"class": {"a": 1}}]
    run = make_run(tmp_path / "run", rows(), summary={"doctor": [LIVE, *odd]})
    code, out = cli(capsys, "doctor", str(run), "--json")
    assert code == 0  # a passing phase is no finding: the exit code is the whole run's
    assert json.loads(out)["runs"][0]["notes"] == [
        "the live doctor said at step 6: no learning signal (no-signal): frac_groups_zero_std 1 (steps 1-6); "
        "over the whole run it is not found"
    ]
    # found over the whole run too: the finding says it, no note repeats it
    live = {**LIVE, "class": "truncation"}
    code, out = cli(capsys, "doctor", str(truncated(tmp_path, name="cut", summary={"doctor": [live]})), "--json")
    assert code == 1 and json.loads(out)["runs"][0]["notes"] == []

"""`rlrecipes show`: a step's stored samples (hand-written files in the format of
rlrecipes.step_samples) within 80 columns, as JSON, and its one-line errors."""

from __future__ import annotations

import json

from tests.conftest import cli, one_error_line
from tests.doctor.rundirs import make_run, rows, sample

LONG = "Let me add them one digit at a time, carrying the ten, which gives " * 3
STEP_10 = [
    sample(0, completion="12+7=19", rewards={"accuracy": 1.0, "format": 0.5}, advantage=0.71),
    sample(0, completion=LONG, rewards={"accuracy": 0.0, "format": 0.0}, advantage=-0.71, length=16, truncated=True),
    sample(
        1,
        prompt="What is 3*4?",
        answer="12",
        completion="<calc>3*4</calc>12</answer>",
        rewards={"accuracy": 1.0, "format": 0.5},
        turns=[
            {"by": "model", "text": "<calc>3*4</calc>"},
            {"by": "tool", "text": "<information>12</information>"},
            {"by": "model", "text": "12</answer>"},
        ],
    ),
]


def run_with_samples(tmp_path):
    return make_run(tmp_path / "run", rows(), samples={1: [sample()], 10: STEP_10})


def test_show_prints_each_group_under_its_prompt_within_80_columns(tmp_path, capsys):
    run = run_with_samples(tmp_path)
    code, text = cli(capsys, "show", str(run), "--step", "10")
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0] == f"step 10 of {run}: 3 completions in 2 groups"
    assert all(len(line) <= 80 for line in lines[1:]), text
    flat = " ".join(text.split())
    assert "group 0 prompt: What is 12+7?" in flat and "answer: 19" in flat
    assert "group 1 prompt: What is 3*4?" in flat and "answer: 12" in flat
    assert "+0.71" in flat and "-0.71" in flat and "16 cut" in flat  # advantages, a cut completion
    assert "accuracy 1" in flat and "format 0.5" in flat  # each reward function by name
    assert any(
        line.endswith("[tool] <information>12</information>") for line in map(str.rstrip, lines)
    )  # a turn a line
    assert "carrying the ten" in flat  # long completions wrap, never cut


def test_show_without_step_shows_the_last_stored_one(tmp_path, capsys):
    code, text = cli(capsys, "show", str(run_with_samples(tmp_path)))
    assert code == 0 and text.splitlines()[0].startswith("step 10 of ")


def test_show_json_holds_the_rows_as_stored(tmp_path, capsys):
    run = run_with_samples(tmp_path)
    code, text = cli(capsys, "show", str(run), "--step", "10", "--json")
    assert code == 0
    out = json.loads(text)
    assert (out["run"], out["step"], out["skipped"]) == (str(run), 10, [])
    assert out["samples"] == [{"step": 10, **row} for row in STEP_10]


def test_a_step_without_samples_names_the_stored_ones(tmp_path, capsys):
    run = run_with_samples(tmp_path)
    code, text = cli(capsys, "show", str(run), "--step", "5")
    assert code == 2
    assert (
        one_error_line(text) == f"error: {run / 'samples' / 'step_5.jsonl'}: no samples for step 5; stored steps: 1, 10"
    )


def test_a_run_that_stores_no_samples_says_how_to_keep_them(tmp_path, capsys):
    run = make_run(tmp_path / "run", rows())
    code, text = cli(capsys, "show", str(run), "--step", "1")
    assert code == 2
    assert one_error_line(text) == (
        f"error: {run}: stores no samples (samples/ is missing); train with trainer.log_samples_every=N to keep them"
    )


def test_show_on_a_folder_that_is_no_run_is_one_line(tmp_path, capsys):
    code, text = cli(capsys, "show", str(tmp_path), "--step", "1")
    assert code == 2 and "not a run directory" in one_error_line(text)


def test_a_torn_sample_line_is_left_out_and_said(tmp_path, capsys):
    run = run_with_samples(tmp_path)
    with open(run / "samples" / "step_10.jsonl", "a") as f:
        f.write('{"step": 10, "prompt": "Wha')
    code, text = cli(capsys, "show", str(run), "--step", "10")
    assert code == 0
    assert "3 completions in 2 groups" in text.splitlines()[0]
    flat = " ".join(text.split())
    assert (
        f"note: {run / 'samples' / 'step_10.jsonl'}: line 4 left out: not a whole JSON record (torn or damaged)" in flat
    )

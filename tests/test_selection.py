"""`rlrecipes select`: variance ranking (hand-computed), tie order, file formats, the paper's history."""

import json

import pytest
from typer.testing import CliRunner

from rlrecipes.cli import app
from rlrecipes.errors import UserError
from rlrecipes.runs.selection import load_history, population_variance, rank, rows_for, select

PAPER = "one_shot_rlvr/One-Shot-RLVR"


def write(tmp_path, obj, name="history.json"):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return path


def test_population_variance_by_hand():
    # mean 0.5; squared deviations 0.25, 0.25, 0, 0 -> 0.5 / 4 (population, not / 3)
    assert population_variance([0.0, 1.0, 0.5, 0.5]) == pytest.approx(0.125)
    assert population_variance([0.25, 0.25, 0.25]) == 0.0
    assert population_variance([]) == 0.0
    # a group without a gold answer (recorded as null -> NaN) is not an observation
    assert population_variance([0.0, float("nan"), 1.0]) == pytest.approx(0.25)


def test_ranking_on_a_hand_made_history_keeps_file_order_on_ties(tmp_path):
    history = load_history(
        write(
            tmp_path,
            {
                "a": [1.0, 1.0, 1.0],  # var 0
                "b": [0.0, 1.0],  # var 0.25
                "c": [0.5, 0.75, 0.25, 0.5],  # mean 0.5, deviations^2 0, 1/16, 1/16, 0 -> 1/32
                "d": [1.0, 0.0],  # var 0.25, ties with b, comes after it in the file
                "e": [0.125],  # var 0, ties with a
            },
        )
    )
    ranked = rank(history)
    assert [r.id for r in ranked] == ["b", "d", "c", "a", "e"]
    assert [r.score for r in ranked] == pytest.approx([0.25, 0.25, 1 / 32, 0.0, 0.0])
    assert [r.rank for r in ranked] == [1, 2, 3, 4, 5]
    assert [r.id for r in select(history, 2)] == ["b", "d"]
    std = rank(history, "std")
    assert [r.id for r in std] == ["b", "d", "c", "a", "e"]
    assert std[0].score == pytest.approx(0.5)


def test_bad_histories_and_options_are_one_line_errors(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_history(tmp_path / "missing.json")
    with pytest.raises(UserError, match="entry 'x' must be a list"):
        load_history(write(tmp_path, {"x": 0.5}))
    with pytest.raises(UserError, match="non-empty JSON object"):
        load_history(write(tmp_path, [0.5]))
    history = {"x": [0.0, 1.0]}
    with pytest.raises(UserError, match="valid: variance, std"):
        rank(history, "entropy")
    with pytest.raises(UserError, match="--top must be at least 1"):
        select(history, 0)


def test_rows_by_index_or_id_field(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps({"problem": f"p{i}", "meta": {"uid": f"u{i}"}}) for i in range(3)))
    chosen = select({"2": [0.0, 1.0], "0": [1.0, 1.0]}, 2)
    assert [r["problem"] for r in rows_for(chosen, data)] == ["p2", "p0"]
    by_uid = select({"u1": [0.0, 1.0]}, 1)
    assert [r["problem"] for r in rows_for(by_uid, data, id_field="meta.uid")] == ["p1"]
    with pytest.raises(UserError, match="not found in .* by row index"):
        rows_for(select({"7": [0.0]}, 1), data)


def test_paper_history_gives_pi1_pi2_pi13_and_pi1209(shared_data):
    history = load_history(shared_data / PAPER / "acc_step_500.json")
    ranked = rank(history, "variance")
    assert len(ranked) == 1209
    assert [ranked[i].id for i in (0, 1, 12)] == ["124", "267", "682"]  # π1, π2, π13
    assert ranked[-1].id == "789" and ranked[-1].score == 0.0  # π1209
    assert [r.id for r in rank(history, "std")] == [r.id for r in ranked]


def test_select_command_writes_dsr_sub_rows(shared_data, tmp_path):
    out = tmp_path / "pi1_pi13.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "select",
            str(shared_data / PAPER / "acc_step_500.json"),
            "--method",
            "variance",
            "--top",
            "13",
            "--data",
            str(shared_data / PAPER / "dsr_sub.parquet"),
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 13
    assert [rows[i]["extra_info"]["index"] for i in (0, 1, 12)] == [124, 267, 682]
    assert rows[0]["reward_model"]["ground_truth"] == "12.8"  # π1's label
    assert rows[12]["reward_model"]["ground_truth"] == "\\frac{4}{3}"  # π13's


def test_select_command_without_data_writes_ids_and_scores(tmp_path):
    out = tmp_path / "ids.jsonl"
    args = ["select", str(write(tmp_path, {"7": [0.0, 1.0], "9": [1.0, 1.0]})), "--top", "1", "--out", str(out)]
    assert CliRunner().invoke(app, args).exit_code == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"id": "7", "rank": 1, "variance": 0.25, "samples": 2}
    ]


@pytest.mark.parametrize(
    "history, warning",
    [
        ({"a": [1.0], "b": [0.0], "c": []}, "each of the 3 examples was scored at most once"),
        ({"a": [0.0, 0.0], "b": [1.0, 1.0]}, "all 2 examples have the same variance (0.0000)"),
        ({"a": [0.0, 1.0], "b": [1.0, 0.0]}, "all 2 examples have the same variance (0.2500)"),
        ({"a": [0.0, 1.0], "b": [1.0, 1.0]}, None),  # 0.25 against 0: a ranking
    ],
)
def test_select_warns_when_the_history_cannot_rank(tmp_path, monkeypatch, history, warning):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(app, ["select", str(write(tmp_path, history)), "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    if warning is None:
        assert "warning" not in said
    else:
        assert said.startswith(f"warning: {warning}") and "ranking is the file's order" in said

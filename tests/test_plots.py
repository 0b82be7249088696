"""`rlrecipes plot`: training and held-out accuracy of a run in one SVG."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from rlrecipes.cli import app
from rlrecipes.errors import UserError
from rlrecipes.runs.plots import BOTTOM, HEIGHT, LEFT, TOP, comparison_figure, read_curves, svg_plot
from tests.conftest import cli, one_error_line

SVG = "{http://www.w3.org/2000/svg}"


def make_run(tmp_path, rows, summary=None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    if summary is not None:
        (tmp_path / "summary.json").write_text(json.dumps(summary))
    return tmp_path


ROWS = [
    {"step": 1, "accuracy": 0.5},
    {"step": 2, "accuracy": 1.0, "heldout_accuracy": 0.4},
    {"step": 3, "accuracy": float("nan")},
    {"step": 4, "accuracy": 1.0, "heldout_accuracy": 0.6},
]


def test_curves_take_training_and_heldout_points_and_the_summary_ends(tmp_path):
    run = make_run(tmp_path, ROWS, {"accuracy_before": 0.3, "accuracy_after": 0.6, "steps": 4})
    curves = read_curves(run)
    assert curves.train == [(1.0, 0.5), (2.0, 1.0), (4.0, 1.0)]  # NaN left out
    assert curves.heldout == [(0.0, 0.3), (2.0, 0.4), (4.0, 0.6)]  # before = step 0


def test_svg_has_both_series_at_the_right_heights(tmp_path):
    run = make_run(tmp_path, ROWS, {"accuracy_before": 0.3, "steps": 4})
    root = ET.fromstring(svg_plot(read_curves(run)))
    lines = {p.get("class"): p for p in root.iter(f"{SVG}polyline")}
    assert set(lines) == {"train", "heldout"}
    assert lines["train"].get("data-points") == "3" and lines["heldout"].get("data-points") == "3"
    plot_h = HEIGHT - TOP - BOTTOM
    heldout = [tuple(map(float, xy.split(","))) for xy in lines["heldout"].get("points").split()]
    assert heldout[0] == (LEFT, pytest.approx(TOP + plot_h * (1 - 0.3), abs=0.05))  # step 0, acc 0.3
    train = [tuple(map(float, xy.split(","))) for xy in lines["train"].get("points").split()]
    assert train[-1][1] == pytest.approx(TOP, abs=0.05)  # accuracy 1.0 on the top edge
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "training accuracy" in texts and "held-out accuracy" in texts


def test_plot_command_writes_the_svg_and_errors_are_one_line(tmp_path):
    (tmp_path / "run").mkdir()
    run = make_run(tmp_path / "run", ROWS)
    result = CliRunner().invoke(app, ["plot", str(run)])
    assert result.exit_code == 0, result.output
    svg = (run / "accuracy.svg").read_text()
    assert len(re.findall("<polyline", svg)) == 2
    with pytest.raises(UserError, match="no metrics.jsonl"):
        read_curves(tmp_path)
    with pytest.raises(UserError, match="nothing to plot"):
        svg_plot(read_curves(make_run(tmp_path, [{"step": 1, "loss": 0.1}])))


# ------------------------------------------------- damaged files and unwritable places: one line
def test_a_torn_last_metrics_line_is_left_out_with_a_note(tmp_path, capsys):
    run = make_run(tmp_path / "run", ROWS)
    with open(run / "metrics.jsonl", "a") as f:
        f.write('{"step": 5, "accur')  # killed while writing step 5
    code, text = cli(capsys, "plot", str(run))
    assert code == 0, text
    assert f"{run / 'metrics.jsonl'}: its last line (5) is torn" in text and "shown: step 4" in " ".join(text.split())
    root = ET.fromstring((run / "accuracy.svg").read_text())
    lines = {p.get("class"): p for p in root.iter(f"{SVG}polyline")}
    assert lines["train"].get("data-points") == "3"  # steps 1, 2, 4 (3 is NaN)


def test_metrics_that_are_not_utf8_are_one_line(tmp_path, capsys):
    run = make_run(tmp_path / "run", ROWS)
    data = (run / "metrics.jsonl").read_bytes().splitlines()
    data[1] = b'{"step": 2, "accuracy": 1.0, "note": "caf\xe9"}'  # latin-1, not UTF-8
    (run / "metrics.jsonl").write_bytes(b"\n".join(data) + b"\n")
    code, text = cli(capsys, "plot", str(run))
    assert code == 0, text
    assert "line 2 is not a whole JSON record (damaged or not UTF-8)" in " ".join(text.split())
    assert read_curves(run, log=lambda _: None).train == [(1.0, 0.5), (4.0, 1.0)]
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in ROWS), encoding="utf-16")
    code, text = cli(capsys, "plot", str(run))
    assert code == 2 and "nothing to plot" in one_error_line(text)


def test_a_torn_summary_is_one_line(tmp_path, capsys):
    run = make_run(tmp_path / "run", ROWS, {"accuracy_before": 0.3})
    (run / "summary.json").write_text('{"accuracy_before": 0.3, "accur')
    code, text = cli(capsys, "plot", str(run))
    assert code == 2 and f"{run / 'summary.json'}: not valid JSON" in one_error_line(text)


def test_plot_out_on_an_unwritable_location_is_one_line(tmp_path, capsys, unwritable_dir):
    pytest.importorskip("matplotlib")
    a, b = make_run(tmp_path / "a", ROWS), make_run(tmp_path / "b", ROWS)
    code, text = cli(capsys, "plot", str(a), "--out", str(unwritable_dir / "acc.svg"))
    assert code == 2 and f"cannot write {unwritable_dir / 'acc.svg'}" in one_error_line(text)
    code, text = cli(capsys, "plot", str(a), str(b), "--out", str(unwritable_dir))
    assert code == 2 and f"cannot write {unwritable_dir}" in one_error_line(text)
    assert "choose another --out" in text


# ------------------------------------------------------- several runs: every curve keyed by run
def train_run(folder, recipe: str, rows: list[dict]):
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(f"recipe:\n  name: {recipe}\nseed: 0\n")
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_a_run_without_a_metric_shifts_no_other_runs_curve(tmp_path):
    """DAPO logs no KL: in the kl panel each curve is still its own run's, in its own colour,
    under its own label, and the last run's curve is there (positions would shift them)."""
    pytest.importorskip("matplotlib")
    kl = {"grpo": [0.01, 0.02], "intuitor": [0.05, 0.07]}
    reward = {"grpo": [0.1, 0.2], "dapo": [0.3, 0.4], "intuitor": [0.5, 0.6]}
    for i, recipe in enumerate(("grpo", "dapo", "intuitor")):
        rows = [{"step": s + 1, "reward_mean": reward[recipe][s]} for s in range(2)]
        for s, row in enumerate(rows):
            if recipe in kl:
                row["kl"] = kl[recipe][s]
        train_run(tmp_path / "sweep" / f"{i}-{recipe}", recipe, rows)
    fig = comparison_figure([tmp_path / "sweep"], ["reward", "kl"], log=lambda _: None)
    reward_ax, kl_ax = fig.axes[:2]

    def curves(ax):
        return {line.get_label(): (line.get_color(), list(line.get_ydata())) for line in ax.get_lines()}

    in_reward, in_kl = curves(reward_ax), curves(kl_ax)
    assert {label: ys for label, (_, ys) in in_reward.items()} == {f"recipe={r}": v for r, v in reward.items()}
    assert {label: ys for label, (_, ys) in in_kl.items()} == {f"recipe={r}": v for r, v in kl.items()}
    assert len({colour for colour, _ in in_reward.values()}) == 3  # a colour per run
    for label, (colour, _) in in_kl.items():  # the same colour as in the reward panel
        assert colour == in_reward[label][0], label
    for ax, expected in ((reward_ax, in_reward), (kl_ax, in_kl)):  # each panel's legend is its own lines
        legend = ax.get_legend()
        assert legend is not None, ax.get_title()
        shown = {t.get_text(): h.get_color() for t, h in zip(legend.get_texts(), legend.legend_handles)}
        assert shown == {label: colour for label, (colour, _) in expected.items()}

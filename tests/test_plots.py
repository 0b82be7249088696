"""`rlrecipes plot`: training and held-out accuracy of a run in one SVG."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from rlrecipes.cli import app
from rlrecipes.errors import UserError
from rlrecipes.plots import BOTTOM, HEIGHT, LEFT, TOP, read_curves, svg_plot

SVG = "{http://www.w3.org/2000/svg}"


def make_run(tmp_path, rows, summary=None):
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

"""docs/atlas.md's results are what benchmarks/atlas_page.py renders from the atlas's stored records,
and every link to an atlas row (README, method cards) lands on a row."""

from __future__ import annotations

import json
import re

import atlas_page
import pytest
from bench_atlas import CPU_TASKS, TASKS

REPO = atlas_page.REPO


def record(bench: str, result: dict, **extra) -> dict:
    return {
        "bench": bench,
        "mode": "full",
        "commit": "0123456789abcdef0123456789abcdef01234567",
        "commit_dirty": False,
        "date": "2026-12-07T10:00:00+00:00",
        "machine": {"cpus": 2, "load_average": [2.0, 1.96, 1.5]},
        "seeds": [0, 1],
        "settings": {},
        "result": result,
        **extra,
    }


def interval(values: list[float], half: float) -> dict:
    mean = sum(values) / len(values)
    return {"n": len(values), "mean": mean, "halfwidth": half, "interval": [mean - half, mean + half]}


# the smollm2 task with two arms measured: greedy 0.10/0.14 for GRPO, 0.12/0.18 for DAPO on seeds 0, 1
TWO_ARMS = {
    "task": "smollm2",
    "steps": 4,
    "heldout": 200,
    "pass_at_k": {"ks": [1, 8], "samples": 8, "problems": 50},
    "commits": ["0123456789abcdef0123456789abcdef01234567", "89abcdef0123456789abcdef0123456789abcdef"],
    "arms": {
        "grpo": {
            "cells": 2,
            "errors": [],
            "greedy": {"mean": 0.12, "stdev": 0.0283},
            "pass@1": {"mean": 0.1},
            "pass@8": {"mean": 0.3},
            "paired": {},
            "collapses": 0,
            "entropy_collapses": 1,
        },
        "dapo": {
            "cells": 3,
            "errors": ["seed 2: RuntimeError: non-finite loss"],
            "greedy": {"mean": 0.15, "stdev": 0.0424},
            "pass@1": {"mean": 0.125},
            "paired": {"grpo": {"greedy": interval([0.02, 0.04], 0.127)}},  # t(1) 12.706 x sd 0.01414 / sqrt 2
            "collapses": 1,
            "entropy_collapses": 0,
        },
    },
}


def test_a_stored_task_is_a_row_per_arm_with_its_figures_in_points_and_its_provenance():
    lines = atlas_page.task_table("smollm2", record("atlas_smollm2", TWO_ARMS))
    assert lines[0] == (
        "4 optimiser steps per arm; held-out greedy accuracy on 200 problems, pass@1/pass@8 from 8 samples on "
        "50 problems; seeds 0, 1; cells at `0123456`, `89abcde`; stored `0123456`, 2026-12-07, 2 cores, load 2.0."
    )
    rows = {line.split("</a>")[-1].split(" |")[0]: line for line in lines if line.startswith("| <a id=")}
    assert list(rows) == ["grpo", "dapo"]
    assert rows["grpo"].endswith("| `recipe=grpo` | 0.120 ± 0.028 | 0.100 / 0.300 | – | 0 of 2 | 1 of 2 |")
    # mean 0.03 -> +3.0 points, interval 0.03 -/+ 0.127 -> [-9.7, +15.7]; the errored seed is not a trained one
    assert rows["dapo"].endswith(
        "| 0.150 ± 0.042 (1 ended in an error) | 0.125 / – | vs grpo +3.0 [-9.7, +15.7] (2 seeds) | 1 of 2 | 0 of 2 |"
    )
    assert "- `dapo`: DAPO's +1/-1 by the task's own checker" in "\n".join(lines)  # the arm's deviation noted


def test_an_arm_that_trained_as_its_reference_gets_a_note_saying_so():
    result = {**TWO_ARMS, "arms": {**TWO_ARMS["arms"], "dapo": {**TWO_ARMS["arms"]["dapo"], "identical_to": ["grpo"]}}}
    text = "\n".join(atlas_page.task_table("smollm2", record("atlas_smollm2", result)))
    assert (
        "- `dapo`: identical to `grpo` on every seed (its scores and its reward, entropy and loss at every step)"
        in text
    )
    assert "- `grpo`: identical" not in text


def test_an_arms_note_is_left_out_where_the_task_runs_it_with_other_settings():
    # the fact base runs DAPO as settings of Search-R1's recipe, without recipe.verifier=task
    assert "- `dapo`: DAPO's +1/-1" not in "\n".join(atlas_page.task_table("factbase", None))
    assert "- `dapo`: DAPO's +1/-1" in "\n".join(atlas_page.task_table("countdown", None))


def test_an_unmeasured_task_lists_every_arm_with_its_setting_and_no_figure():
    lines = atlas_page.task_table("smollm2", None)
    assert lines[0].startswith(f"*{atlas_page.UNMEASURED}*")
    rows = [line for line in lines if line.startswith("| <a id=")]
    assert len(rows) == len(TASKS["smollm2"].arms)
    spurious = next(r for r in rows if 'id="smollm2-spurious"' in r)
    assert "*(no signal: the random reward says nothing about the answer" in spurious
    assert spurious.endswith("| – | – | – | – | – |")


def test_every_arm_has_one_page_wide_anchor_on_the_first_task_that_runs_it():
    text = "\n".join(line for name in CPU_TASKS for line in atlas_page.task_table(name, None))
    ids = re.findall(r'<a id="([^"]+)"></a>', text)
    assert len(ids) == len(set(ids))  # an id twice would send a link to the first only
    every_arm = {arm for name in CPU_TASKS for arm in TASKS[name].arms}
    assert {i.removeprefix("arm-") for i in ids if i.startswith("arm-")} == every_arm
    assert 'id="arm-ttrl"' in "\n".join(atlas_page.task_table("smollm2", None))  # not on the toy, which lacks it


def test_a_claim_prints_its_verdict_and_the_figures_it_rests_on():
    claims = {
        "3": {
            "claim": "Clip-Cov and KL-Cov keep entropy from collapsing at no accuracy cost",
            "verdict": "not decided",
            "clip_cov": {
                "verdict": "supported",
                "tasks": ["toy"],
                "entropy_collapsed_clip_cov": 0,
                "entropy_collapsed_grpo": 2,
                "greedy_vs_grpo": interval([0.01, 0.03], 0.127),
            },
            "waiting_for": ["smollm2 (4 of 25 cells stored)"],
        },
    }
    lines = atlas_page.claims_table(record("atlas_claims", claims, settings={"tasks": ["toy"]}))
    assert lines[0] == "From the complete tasks' stored cells (toy); `0123456`, 2026-12-07, 2 cores, load 2.0."
    assert lines[-1] == (
        "| 3 | Clip-Cov and KL-Cov keep entropy from collapsing at no accuracy cost | **not decided** | clip_cov: "
        "supported (tasks toy; entropy collapsed clip cov 0; entropy collapsed grpo 2; greedy vs grpo +2.0 "
        "[-10.7, +14.7] (2 seeds)); waits for smollm2 (4 of 25 cells stored) |"
    )


def test_the_page_is_the_one_rendered_from_the_stored_records():
    problems = atlas_page.page_differences(atlas_page.ATLAS_PAGE.read_text())
    assert not problems, "run `python benchmarks/readme_figures.py --write`:\n" + "\n".join(problems)


def test_a_block_that_differs_or_is_missing_is_named(tmp_path):  # against the stored records
    text = atlas_page.ATLAS_PAGE.read_text()
    stale = text.replace("<!-- atlas:toy -->\n", "<!-- atlas:toy -->\nan old figure\n", 1)
    assert atlas_page.page_differences(stale) == ["docs/atlas.md toy: differs from the stored results"]
    gone = atlas_page.MARKED.sub(lambda m: "" if m[1] == "claims" else m[0], text)
    assert atlas_page.page_differences(gone) == ["docs/atlas.md: no <!-- atlas:claims --> block"]
    with pytest.raises(SystemExit, match="atlas:nope --> names no block; valid: toy, smollm2"):
        atlas_page.with_results("<!-- atlas:nope -->\n<!-- /atlas -->", tmp_path)


def test_a_smoke_record_is_never_quoted(tmp_path):
    (tmp_path / "atlas_toy.json").write_text(json.dumps({**record("atlas_toy", TWO_ARMS), "mode": "smoke"}))
    with pytest.raises(SystemExit, match="a 'smoke' run; only a full run's result is quoted"):
        atlas_page.blocks(tmp_path)


def test_every_link_to_an_atlas_row_lands_on_one():
    ids = set(re.findall(r'<a id="([^"]+)"></a>', atlas_page.ATLAS_PAGE.read_text()))
    pages = [REPO / "README.md", *sorted((REPO / "docs" / "methods").glob("*.md"))]
    links = [(p.name, anchor) for p in pages for anchor in re.findall(r"atlas\.md#([\w-]+)", p.read_text())]
    assert links, "the README's method table links its rows to the atlas"
    assert [link for link in links if link[1] not in ids] == []


def test_a_stored_task_gets_its_figure_and_the_table_shows_it(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    cells = [
        {"kind": "cell", "arm": arm, "seed": seed, "greedy": 0.1 + seed / 10, "entropy": [0.5, 0.4, 0.3]}
        for arm in ("grpo", "dapo")
        for seed in (0, 1)
    ]
    (tmp_path / "atlas_smollm2.json").write_text(json.dumps(record("atlas_smollm2", TWO_ARMS)))
    (tmp_path / "atlas_smollm2.cells.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in [{"kind": "settings"}, *cells])
    )
    out = tmp_path / "figures"
    assert atlas_page.write_figures(tmp_path, out) == [out / "smollm2.png"]
    assert (out / "smollm2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    monkeypatch.setattr(atlas_page, "FIGURES_DIR", out)
    table = atlas_page.task_table("smollm2", record("atlas_smollm2", TWO_ARMS))
    assert "![smollm2: held-out accuracy and entropy per arm](atlas/smollm2.png)" in table
    assert not any("atlas/smollm2.png" in line for line in atlas_page.task_table("smollm2", None))


def test_the_starting_model_has_no_collapse_counts():
    start = {"cells": 1, "errors": [], "greedy": {"mean": 0.05, "stdev": 0.0}, "paired": {}}
    result = {**TWO_ARMS, "arms": {"untrained": {**start, "collapses": 0, "entropy_collapses": 0}}}
    [row] = [line for line in atlas_page.task_table("smollm2", record("atlas_smollm2", result)) if "id=" in line]
    assert row.endswith("| 0.050 ± 0.000 | – / – | – | – | – |")  # not "0 of 1": it trained no run


def test_a_difference_that_rounds_to_zero_prints_without_a_minus_sign():
    assert [atlas_page.points(v) for v in (-0.0, -0.0004, 0.0004, -0.0222, 0.031)] == [
        "+0.0",
        "+0.0",
        "+0.0",
        "-2.2",
        "+3.1",
    ]

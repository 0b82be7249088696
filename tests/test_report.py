"""`rlrecipes report` and `rlrecipes plot` over many runs: hand-made run folders for the
rules, and one real 2x2 sweep (joblib launcher) for the whole path."""

import csv
import io
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlrecipes.cli import app
from rlrecipes.errors import UserError
from rlrecipes.runs.discover import load_runs
from rlrecipes.runs.report import build_report, group_rows, make_report, to_markdown
from tests.conftest import TINY, cli, one_error_line

ROOT = Path(__file__).resolve().parents[1]


def fake_run(
    folder: Path, overrides: list[str], config: str, metrics: list[dict], summary: dict | None, torn_tail: str = ""
) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(config)
    (folder / "versions.json").write_text(json.dumps({"job_overrides": overrides}))
    (folder / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics) + torn_tail)
    if summary is not None:
        (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def config(lr: float, seed: int, recipe: str = "grpo") -> str:
    return (
        f"recipe:\n  name: {recipe}\n  beta: 0.0\nmodel:\n  name: toy\n  name_or_path: null\n"
        f"data:\n  name: arithmetic\ntrainer:\n  learning_rate: {lr}\n  max_steps: 3\nseed: {seed}\n"
        f"run_dir: /somewhere/{lr}-{seed}\n"
    )


def summary(before: float, after: float, seed: int) -> dict:
    return {
        "recipe": "grpo",
        "model": "/cache/toy/abc",
        "data": "arithmetic",
        "seed": seed,
        "steps": 3,
        "accuracy_before": before,
        "accuracy_after": after,
    }


@pytest.fixture
def sweep(tmp_path):
    """lr 1e-4 x seeds 0, 1 finished; lr 3e-4 seed 0 finished, seed 1 killed at step 2."""
    root = tmp_path / "multirun" / "2026-01-01_00-00-00"
    after = {(1e-4, 0): 0.5, (1e-4, 1): 0.7, (3e-4, 0): 0.9, (3e-4, 1): None}
    for job, ((lr, seed), acc) in enumerate(after.items()):
        rows = [{"step": s, "reward_mean": 0.1 * s + lr * 1000, "accuracy": 0.2 * s} for s in (1, 2, 3)]
        done = acc is not None
        fake_run(
            root / f"{job}-grpo-arithmetic",
            ["trainer.max_steps=3", f"seed={seed}", f"trainer.learning_rate={lr}", f"run_dir=/x/{job}"],
            config(lr, seed),
            rows if done else rows[:2],
            summary(0.3, acc, seed) if done else None,
            torn_tail="" if done else '{"step": 3, "rew',
        )  # killed while writing a line
    (root / "multirun.yaml").write_text("hydra: {}\n")
    # a training run's own final eval is part of that run, not a run of the sweep
    (root / "0-grpo-arithmetic" / "eval").mkdir()
    (root / "0-grpo-arithmetic" / "eval" / "summary.json").write_text(json.dumps({"kind": "eval"}))
    return root


def test_one_row_per_run_with_identity_differing_params_and_the_state_of_a_killed_run(sweep):
    report = build_report(load_runs([sweep]))
    assert [r["run"] for r in report.rows] == [f"{i}-grpo-arithmetic" for i in range(4)]
    # seed and lr differ; max_steps (same everywhere) and run_dir (a location) are no columns
    assert [c for c in report.columns if report.kinds[c] == "param"] == ["trainer.learning_rate"]
    assert {"recipe", "model", "data", "seed"} <= set(report.columns)
    assert [r["seed"] for r in report.rows] == [0, 1, 0, 1]
    assert report.rows[0]["model"] == "toy"  # the configured name, not the cache folder
    killed = report.rows[3]
    assert killed["state"] == "stopped" and killed["heldout_after"] is None
    assert killed["reward_final"] == pytest.approx(0.2 + 0.3) and killed["steps"] == 2
    first = report.rows[0]
    assert first["state"] == "finished" and first["heldout_after"] == 0.5 and first["gain"] == pytest.approx(0.2)
    assert first["reward_best"] == pytest.approx(0.3 + 0.1) and first["train_accuracy_final"] == pytest.approx(0.6)


def test_group_by_gives_mean_std_and_n_over_the_seeds(sweep):
    report = make_report([sweep], group_by=["trainer.learning_rate"])
    rows = {r["trainer.learning_rate"]: r for r in report.rows}
    low = rows[1e-4]["heldout_after"]
    assert low["mean"] == pytest.approx(0.6) and low["std"] == pytest.approx(statistics.stdev([0.5, 0.7]))
    assert low["n"] == 2 and rows[1e-4]["runs"] == 2 and rows[1e-4]["seed"] == "*"
    high = rows[3e-4]
    assert high["runs"] == 2 and high["heldout_after"]["n"] == 1  # the killed run has no final accuracy
    assert high["heldout_after"]["mean"] == pytest.approx(0.9) and high["state"] == "1 finished, 1 stopped"
    assert high["reward_final"]["n"] == 2  # but it has rewards
    assert "90.0 ± 0.0 (n=1)" in to_markdown(report)  # fewer runs than the group has: said


def test_auto_grouping_sorting_and_filtering(sweep):
    grouped = make_report([sweep], group_by=["auto"], sort="heldout_after", descending=True)
    assert [r["trainer.learning_rate"] for r in grouped.rows] == [3e-4, 1e-4]
    rows = make_report([sweep], where=["seed=1", "state=finished"]).rows
    assert [r["run"] for r in rows] == ["1-grpo-arithmetic"]
    rows = make_report([sweep], where=["heldout_after>0.6"]).rows
    assert [r["heldout_after"] for r in rows] == [0.7, 0.9]
    with pytest.raises(UserError, match="no column 'lr'"):
        make_report([sweep], where=["lr=1"])
    with pytest.raises(UserError, match="--group-by nope: no such column"):
        group_rows(build_report(load_runs([sweep])), ["nope"])


def test_exports_parse_back_and_globs_find_the_runs(sweep, tmp_path):
    out = tmp_path / "exports"
    result = CliRunner().invoke(
        app, ["report", str(sweep.parent / "*" / "*-grpo-*"), "--group-by", "trainer.learning_rate", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO((out / "report.csv").read_text())))
    assert len(rows) == 2 and float(rows[0]["heldout_after"]) == pytest.approx(0.6)  # fractions, not %
    assert float(rows[0]["heldout_after_std"]) == pytest.approx(statistics.stdev([0.5, 0.7]))
    assert rows[1]["heldout_after_n"] == "1"
    data = json.loads((out / "report.json").read_text())
    assert data["grouped"] is True and data["rows"][0]["heldout_after"]["n"] == 2
    table = [line for line in (out / "report.md").read_text().splitlines() if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    cells = dict(zip(header, (c.strip() for c in table[2].strip("|").split("|"))))
    assert cells["heldout_after"] == "60.0 ± 14.1" and cells["runs"] == "2"  # %, ready for a paper


def test_terminal_table_tells_sweep_runs_apart_at_80_columns(sweep):
    result = CliRunner().invoke(app, ["report", str(sweep)], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines)
    body = [line for line in lines if line.split()[:1] in (["0"], ["1"], ["2"], ["3"])]  # by run
    assert len(body) == 4  # one line per run: nothing wraps
    assert "0.0001" in body[1] and "0.0003" in body[2] and "50.0" in body[0] and "70.0" in body[1]
    assert body[3].split()[3] == "2*" and "unfinished" in result.output  # how far the killed run got
    assert "recipe grpo" in result.output  # what every run shares is said once


def test_bad_paths_are_one_line(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        make_report([tmp_path / "nope"])
    with pytest.raises(UserError, match="matches nothing"):
        make_report([str(tmp_path / "nope*")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no run here or below"):
        make_report([tmp_path / "empty"])


# ------------------------------------------------------------ a real sweep, end to end
@pytest.fixture(scope="module")
def real_sweep(tmp_path_factory, toy_model_dir):
    """2 seeds x 2 learning rates on the toy, two jobs at a time (joblib), stdout in a file."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher")
    pytest.importorskip("matplotlib")
    root = tmp_path_factory.mktemp("sweep")
    log = root / "stdout.txt"
    tiny = [t for t in TINY if t != "trainer.progress=false"]  # progress on: lines into the file
    with open(log, "w") as out:
        # `python -m`, as under accelerate launch: the job function must still reach joblib's
        # workers by reference (defined in __main__ it would be pickled with a Console's lock)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rlrecipes.cli",
                "train",
                "-m",
                "hydra/launcher=joblib",
                "hydra.launcher.n_jobs=2",
                *tiny,
                "seed=0,1",
                "trainer.learning_rate=1e-4,3e-4",
                f"output_root={root}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=root,
            env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)},
            timeout=900,
        )
    assert done.returncode == 0, log.read_text()[-4000:]
    [folder] = (root / "multirun").iterdir()
    return folder, log.read_text()


@pytest.mark.integration
def test_sweep_report_columns_and_values_come_from_each_run(real_sweep):
    folder, _ = real_sweep
    runs = sorted(
        (p for p in folder.iterdir() if (p / "summary.json").is_file()), key=lambda p: int(p.name.split("-")[0])
    )
    summaries = [json.loads((p / "summary.json").read_text()) for p in runs]
    report = make_report([folder])
    assert [c for c in report.columns if report.kinds[c] == "param"] == ["trainer.learning_rate"]
    assert [(r["seed"], r["trainer.learning_rate"]) for r in report.rows] == [
        (0, 1e-4),
        (0, 3e-4),
        (1, 1e-4),
        (1, 3e-4),
    ]
    for row, s in zip(report.rows, summaries):
        assert (row["seed"], row["heldout_after"]) == (s["seed"], s["accuracy_after"])
        assert row["heldout_before"] == s["accuracy_before"]
        assert row["reward_final"] == s["final_metrics"]["reward_mean"] and row["state"] == "finished"
    grouped = make_report([folder], group_by=["trainer.learning_rate"])
    for row in grouped.rows:
        mine = [
            s["accuracy_after"]
            for s, r in zip(summaries, report.rows)
            if r["trainer.learning_rate"] == row["trainer.learning_rate"]
        ]
        assert row["heldout_after"]["mean"] == pytest.approx(statistics.fmean(mine)) and row["runs"] == 2
        assert row["heldout_after"]["std"] == pytest.approx(statistics.stdev(mine))
    # written by the sweep itself when it ended, parsed back
    rows = list(csv.DictReader(io.StringIO((folder / "report.csv").read_text())))
    assert [float(r["heldout_after"]) for r in rows] == [s["accuracy_after"] for s in summaries]
    md = (folder / "report.md").read_text().splitlines()
    assert len([line for line in md if line.startswith("| ")]) == 1 + 4 and "learning_rate" in md[0]
    assert (folder / "comparison.png").stat().st_size > 0 and (folder / "comparison.svg").stat().st_size > 0


@pytest.mark.integration
def test_sweep_plot_has_one_line_per_run_or_per_group(real_sweep, tmp_path):
    from rlrecipes.runs.plots import plot_comparison

    folder, _ = real_sweep
    fig, files = plot_comparison([folder], ["reward", "entropy"], out=tmp_path)
    assert [f.name for f in files] == ["comparison.png", "comparison.svg"] and files[0].stat().st_size > 1000
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    reward, entropy = fig.axes[:2]
    assert reward.get_title() == "reward_mean" and entropy.get_title() == "entropy"
    labels = sorted(line.get_label() for line in entropy.get_lines())
    assert labels == [
        "seed=0, learning rate=0.0001",
        "seed=0, learning rate=0.0003",
        "seed=1, learning rate=0.0001",
        "seed=1, learning rate=0.0003",
    ]
    for line in entropy.get_lines():  # each line is its run's logged values
        assert list(line.get_xdata()) == [1.0, 2.0]
    fig, _ = plot_comparison([folder], ["entropy"], group_by=("trainer.learning_rate",), out=tmp_path)
    lines = fig.axes[0].get_lines()
    assert sorted(line.get_label() for line in lines) == ["learning rate=0.0001 (n=2)", "learning rate=0.0003 (n=2)"]
    assert len(fig.axes[0].collections) == 2  # a band per group
    result = CliRunner().invoke(app, ["plot", str(folder), "--metric", "nope"])
    assert result.exit_code != 0 and "no run logged nope" in str(result.exception)


@pytest.mark.integration
def test_training_progress_lines_reach_a_redirected_file(real_sweep):
    _, text = real_sweep
    lines = [line for line in text.splitlines() if " train step " in line]
    assert len(lines) == 4 * 2  # 2 steps a run, a line each (short runs), each step once
    assert all("reward" in line and "acc" in line and "ETA" in line for line in lines)
    # joblib interleaves the jobs' lines: each says whose it is
    assert sorted(line.split(" train step")[0] for line in lines) == [f"[job {n}]" for n in range(4) for _ in (1, 2)]
    assert "sweep report in" in text and "report.csv, report.json, report.md" in text


# ------------------------------------------------ what a table must say, and unwritable places
def test_a_torn_last_metrics_line_is_flagged_not_hidden(sweep, capsys):
    """The killed run's step 3 line is torn: the table shows step 2 and says why."""
    code, text = cli(capsys, "report", str(sweep))
    assert code == 0, text
    flat = "".join(text.split())  # a note is wrapped at the terminal's width, paths too
    torn = sweep / "3-grpo-arithmetic" / "metrics.jsonl"
    assert f"note:{torn}:itslastline(3)istorn" in flat and "shown:step2,thelastwholeline" in flat
    assert flat.count("note:") == 1  # the whole runs get none


def test_a_glob_that_matches_a_folder_without_runs_skips_it_with_a_note(sweep, capsys):
    (sweep / "notes").mkdir()  # beside the runs, matched by the glob
    notes: list[str] = []
    report = make_report([str(sweep / "*")], log=notes.append)
    assert [r["run"] for r in report.rows] == [f"{i}-grpo-arithmetic" for i in range(4)]
    assert f"skipping {sweep / 'notes'}: no run here or below" in " ".join(notes)
    assert f"skipping {sweep / 'multirun.yaml'}" in " ".join(notes)  # a file the glob matches
    code, text = cli(capsys, "report", str(sweep / "*"))
    assert code == 0 and "note: skipping" in text, text
    with pytest.raises(UserError, match="no run here or below"):  # named, not globbed: still an error
        make_report([sweep / "notes"])
    with pytest.raises(UserError, match="no run directory among the matches"):
        make_report([str(sweep / "note*")])


def test_report_out_on_an_unwritable_location_is_one_line(sweep, capsys, unwritable_dir):
    code, text = cli(capsys, "report", str(sweep), "--out", str(unwritable_dir))
    assert code == 2 and f"cannot write {unwritable_dir / 'report.csv'}" in one_error_line(text)
    code, text = cli(capsys, "report", str(sweep), "--md", str(unwritable_dir / "t.md"))
    assert code == 2 and "choose another --out" in one_error_line(text)


def test_a_run_from_before_a_key_moved_shares_the_new_keys_column():
    from rlrecipes.runs.discover import with_moved_keys

    old = {"recipe.dynamic_sampling": True, "recipe.max_generation_rounds": 7, "seed": 0}
    assert with_moved_keys(old) == {
        "recipe.dynamic_sampling.enabled": True,
        "recipe.dynamic_sampling.max_rounds": 7,
        "seed": 0,
    }
    new = {"recipe.dynamic_sampling.enabled": False}
    assert with_moved_keys(new) == new
    old = {"trainer.save_steps": 20, "trainer.eval_every": 10, "trainer.reward_timeout_s": 60.0}
    assert with_moved_keys(old) == {
        "trainer.checkpoints.every": 20,
        "trainer.eval.every": 10,
        "trainer.reward_guard.timeout_s": 60.0,
    }


def test_a_run_from_before_the_trainer_keys_moved_is_reported_under_the_new_names(tmp_path):
    """An old run's config.yaml (flat `trainer.save_steps`) and command line sit in the same
    column as a new run's `trainer.checkpoints.every`: the report compares them."""
    old_config = config(1e-4, 0).replace("  max_steps: 3\n", "  max_steps: 3\n  save_steps: 20\n")
    new_config = config(1e-4, 0).replace("  max_steps: 3\n", "  max_steps: 3\n  checkpoints:\n    every: 40\n")
    rows = [{"step": 1, "reward_mean": 0.1, "accuracy": 0.2}]
    fake_run(tmp_path / "old", ["trainer.save_steps=20"], old_config, rows, summary(0.3, 0.5, 0))
    fake_run(tmp_path / "new", ["trainer.checkpoints.every=40"], new_config, rows, summary(0.3, 0.5, 0))
    report = build_report(load_runs([tmp_path / "old", tmp_path / "new"]))
    assert [c for c in report.columns if report.kinds[c] == "param"] == ["trainer.checkpoints.every"]
    assert [(r["run"], r["trainer.checkpoints.every"]) for r in report.rows] == [("old", 20), ("new", 40)]


# ------------------------------------------------------- narrow terminals (issue 35)
def render_table(report, width: int) -> list[str]:
    from rich.console import Console

    from rlrecipes.runs.report import rich_table

    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(rich_table(report, width=width))
    return console.file.getvalue().splitlines()


def deep_sweep(root: Path, extra: int = 0) -> list[Path]:
    """Three runs in long nested folders, with `extra` more settings that differ between them."""
    runs = []
    for job, (lr, seed) in enumerate([(1e-4, 0), (3e-4, 1), (1e-5, 2)]):
        rows = [{"step": s, "reward_mean": 0.1 * s, "accuracy": 0.2 * s} for s in (1, 2, 3)]
        overrides = [f"seed={seed}", f"trainer.learning_rate={lr}"] + [
            f"recipe.knob_{k}={job}{k}" for k in range(extra)
        ]
        name = f"{job}-grpo-arithmetic-learning_rate_sweep/subfolder/experiment_{job}_lr{lr}"
        runs.append(fake_run(root / name, overrides, config(lr, seed), rows, summary(0.3, 0.5 + 0.1 * job, seed)))
    return runs


@pytest.mark.parametrize("width", [80, 60])
def test_run_names_are_shortened_from_the_left_at_whole_path_parts_never_inside_a_word(tmp_path, width):
    runs = deep_sweep(tmp_path / "multirun" / "2026-01-01_00-00-00")
    names = [str(p.relative_to(tmp_path / "multirun" / "2026-01-01_00-00-00")) for p in runs]
    lines = render_table(make_report([tmp_path / "multirun"]), width)
    assert max(map(len, lines)) <= width, "\n".join(lines)
    shown = [line.split()[0] for line in lines if line.lstrip().startswith("…")]
    assert len(shown) == 3, "\n".join(lines)  # one line per run: no name folded over lines
    for name, cell in zip(names, shown):
        tail = cell[1:]
        assert name.endswith(tail), (name, cell)
        before = name[len(name) - len(tail) - 1]  # the character the cut removed last
        assert tail[0] in "/-_" or before in "/-_", f"{cell!r} starts inside a word of {name!r}"
    assert shown[0] == "…/experiment_0_lr0.0001"  # the distinctive tail, whole


def test_left_cut_keeps_whole_words_when_the_last_path_part_is_too_long():
    from rlrecipes.display import left_cut

    assert left_cut("short", 24) == "short"
    assert left_cut("a/b/0-grpo-arithmetic-learning_rate_sweep_longname", 24) == "…_rate_sweep_longname"
    assert left_cut("outputs/" + "x" * 30, 24) == "…/" + "x" * 30  # one word longer than the cap: whole


@pytest.mark.parametrize("key", ["trainer.learning_rate", "recipe.knob_5"])
def test_group_by_key_keeps_its_column_at_60_columns_with_many_columns(tmp_path, key):
    deep_sweep(tmp_path / "sweep", extra=6)
    report = make_report([tmp_path / "sweep"], group_by=[key])
    lines = render_table(report, 60)
    text = "\n".join(lines)
    assert max(map(len, lines)) <= 60, text
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("───"))
    label = key.rsplit(".", 1)[-1].replace("_", " ")
    header = " ".join(" ".join(lines[2:rule]).split())  # a header may wrap at its spaces
    assert header.startswith(label), text  # the first column: what a row is
    values = {str(r[key]) for r in report.rows}
    body = [line.split()[0] for line in lines[rule + 1 : rule + 1 + len(values)]]
    assert set(body) == values, text
    assert f"not shown at 60 columns: {label}" not in text and ", " + label + "," not in text


def stages_parent(root: Path, finished: bool = True) -> Path:
    """`rlrecipes stages pipeline=toy_sft_grpo` as it writes its parent: the pipeline's
    config.yaml and versions.json, a run per stage, a phase's data folder, and (once every stage
    finished) the pipeline's summary.json."""
    parent = root / "2026-01-01_00-00-00-stages-toy_sft_grpo"
    parent.mkdir(parents=True)
    (parent / "config.yaml").write_text(
        "pipeline:\n  name: toy_sft_grpo\n  paper: null\n  stages:\n  - name: prime\n    command: sft\n"
        "  - name: rl\n    command: train\n    model_from: prime\nrun_dir: null\nresume: false\n"
    )
    (parent / "versions.json").write_text(json.dumps({"command": "rlrecipes stages"}))
    sft = {"recipe": "sft", "model": "/cache/toy/abc", "data": "arithmetic", "seed": 0, "steps": 60}
    sft |= {"accuracy_before": 0.1, "accuracy_after": 0.3, "loss_before": 2.5, "loss_after": 1.25}
    sft_config = "model:\n  name: toy\n  name_or_path: null\ndata:\n  name: arithmetic\nseed: 0\n"
    fake_run(parent / "1-prime", [f"run_dir={parent / '1-prime'}"], sft_config, [{"step": 60, "loss": 1.3}], sft)
    rl_overrides = [f"model.name_or_path={parent / '1-prime' / 'model'}", f"run_dir={parent / '2-rl'}"]
    rows = [{"step": s, "reward_mean": 0.2 * s, "accuracy": 0.2 * s} for s in (1, 2, 3)]
    rl_config = config(2e-4, 0).replace("name_or_path: null", f"name_or_path: {parent / '1-prime' / 'model'}")
    fake_run(parent / "2-rl", rl_overrides, rl_config, rows, summary(0.3, 0.6, 0))
    (parent / "2-rl-data").mkdir()  # a curriculum phase's prepared data: no run
    (parent / "2-rl-data" / "train.jsonl").write_text('{"problem": "1+1", "answer": "2"}\n')
    if finished:
        stages = [{"stage": "prime", "command": "sft"}, {"stage": "rl", "command": "train"}]
        (parent / "summary.json").write_text(json.dumps({"pipeline": "toy_sft_grpo", "paper": None, "stages": stages}))
    return parent


@pytest.mark.parametrize("finished", [True, False])
def test_a_stages_parent_reports_one_row_per_stage(tmp_path, capsys, finished):
    parent = stages_parent(tmp_path, finished)
    for given in (parent, tmp_path):  # the parent, or a folder that holds it
        report = make_report([given])
        assert [r["run"].rsplit("/", 1)[-1] for r in report.rows] == ["1-prime", "2-rl"]
        assert [r["recipe"] for r in report.rows] == ["sft", "grpo"]
        prime, rl = report.rows
        assert (prime["heldout_after"], prime["loss_before"], prime["loss_after"]) == (0.3, 2.5, 1.25)
        assert rl["heldout_after"] == 0.6 and rl["model"] == "1-prime/model"  # started from the SFT stage
    code, text = cli(capsys, "report", str(parent))
    assert code == 0, text
    assert [line.split()[0] for line in text.splitlines() if line.split()[:1] in (["1-prime"], ["2-rl"])] == [
        "1-prime",
        "2-rl",
    ], text


# ------------------------------------------------ a sweep's own lines (the Hydra callback)
def test_each_sweep_job_starts_with_a_line_naming_its_overrides(capsys):
    import pickle

    from omegaconf import OmegaConf

    from rlrecipes.runs.sweep_report import SweepReport

    sweep = ["seed=0,1", "recipe.beta=0.0,0.01", "trainer.max_steps=3"]
    basic = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
    callback = SweepReport()
    callback.on_multirun_start(
        OmegaConf.create({"hydra": {"overrides": {"task": sweep}, "sweeper": {"_target_": basic}}})
    )
    callback = pickle.loads(pickle.dumps(callback))  # as joblib and Slurm take it to the job's process

    def job(num: int, overrides: list[str], mode: str = "MULTIRUN") -> str:
        hydra = {"mode": mode, "job": {"num": num}, "overrides": {"task": overrides}}
        callback.on_job_start(OmegaConf.create({"hydra": hydra}), task_function=None)
        return capsys.readouterr().out

    # the basic sweeper's order: seed=0 with each beta, then seed=1 with each
    assert (
        job(2, ["seed=1", "recipe.beta=0.0", "trainer.max_steps=3"]) == "[job 2] starts (3/4): seed=1 recipe.beta=0.0\n"
    )
    assert job(0, ["seed=0", "recipe.beta=0.0", "trainer.max_steps=3"], mode="RUN") == ""  # no sweep: no line
    optimiser = SweepReport()  # a sweeper that chooses its jobs as it goes: no count, every override
    optimiser.on_multirun_start(
        OmegaConf.create({"hydra": {"overrides": {"task": sweep}, "sweeper": {"_target_": "x.Optuna"}}})
    )
    optimiser.on_job_start(
        OmegaConf.create({"hydra": {"mode": "MULTIRUN", "job": {"num": 5}, "overrides": {"task": ["seed=3"]}}}),
        task_function=None,
    )
    assert capsys.readouterr().out == "[job 5] starts: seed=3\n"


def test_a_sweep_ends_with_the_table_rlrecipes_report_prints(sweep, capsys, monkeypatch):
    from omegaconf import OmegaConf

    from rlrecipes.runs import sweep_report

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sweep_report, "plot_comparison", lambda paths: (None, []))  # the figure: tested above
    code, printed = cli(capsys, "report", str(sweep))
    assert code == 0 and "recipe grpo" in printed, printed
    sweep_report.SweepReport().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(sweep)}}}))
    out = capsys.readouterr().out
    assert out.startswith(printed), out  # the same table and notes, then where the exports are
    assert "".join(out[len(printed) :].split()) == f"sweepreportin{sweep}:report.csv,report.json,report.md"
    assert (sweep / "report.csv").is_file()


def test_trains_summary_names_its_run_folder_on_a_line_of_its_own_never_split(monkeypatch):
    """A table title wraps at the table's width ("…-search_r1-" / "factbase"); the folder is a line
    of its own, whole where it fits, else its end from a whole path part, within the width."""
    from rich.console import Console

    from rlrecipes.commands import train

    summary = {"accuracy_before": 0.5, "accuracy_after": 0.495, "wall_seconds": 61}
    run = "outputs/2026-12-07_06-43-30-search_r1-factbase"
    deep = "/tmp/pytest-of-root/pytest-115/test_a_sweep_on_80_columns_is_0/multirun/0-seed_0"
    for folder, first in (
        (run, f"run {run}"),
        (deep, "run …/pytest-115/test_a_sweep_on_80_columns_is_0/multirun/0-seed_0"),
    ):
        out = io.StringIO()
        monkeypatch.setattr(train, "console", Console(width=80, file=out, color_system=None))
        train.print_summary(summary, folder)
        lines = out.getvalue().splitlines()
        assert lines[0] == first and max(map(len, lines)) <= 80
        assert "│ gain (points)" in out.getvalue() and "-0.5" in out.getvalue()

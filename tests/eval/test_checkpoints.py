"""`rlrecipes eval-checkpoints`: finding checkpoints, the best-average choice, and a real sweep."""

import json

import pytest

from rlrecipes.compose.compose import compose_config
from rlrecipes.errors import UserError
from rlrecipes.runs.checkpoints import CHECKPOINT_SUITES, Checkpoint, find_checkpoints, pick_best, sweep
from tests.conftest import cli, compose, one_error_line


def test_best_average_by_hand():
    scores = {
        0: {"math500": 0.36, "aime24": 0.067},  # avg 0.2135
        20: {"math500": 0.70, "aime24": 0.10},  # avg 0.40
        40: {"math500": 0.74, "aime24": 0.08},  # avg 0.41  <- best
        60: {"math500": 0.72, "aime24": 0.10},  # avg 0.41, ties with 40: earlier wins
        80: {"math500": 0.73, "aime24": 0.05},  # avg 0.39  <- last
    }
    sel = pick_best(scores)
    assert sel.best_step == 40 and sel.last_step == 80
    assert sel.averages[0] == pytest.approx(0.2135) and sel.averages[80] == pytest.approx(0.39)
    report = sel.as_dict()
    assert report["best_average"] == {"step": 40, "average": pytest.approx(0.41), "math500": 0.74, "aime24": 0.08}
    assert report["last"]["step"] == 80 and len(report["checkpoints"]) == 5


def test_incomparable_checkpoints_are_refused():
    with pytest.raises(UserError, match="averages would not be comparable"):
        pick_best({1: {"a": 0.5, "b": 0.5}, 2: {"a": 0.5}})
    with pytest.raises(UserError, match="no checkpoint"):
        pick_best({})


def test_paper_suite_is_the_six_benchmarks_under_the_one_shot_protocol():
    (part,) = CHECKPOINT_SUITES["paper"]
    assert part.benchmarks == ("math500", "aime24", "amc23", "minerva_math", "olympiadbench", "aime25")
    assert part.overrides == ("protocol=one_shot_rlvr",)
    cfg = compose_config("eval", [*part.overrides, f"benchmark.names=[{','.join(part.benchmarks)}]"])
    sampled = {name: dict(cfg.protocol.per_benchmark[name]) for name in ("aime24", "aime25", "amc23")}
    assert all(s["num_samples"] == 8 and s["temperature"] == 0.6 for s in sampled.values())
    assert cfg.protocol.num_samples == 1 and cfg.protocol.template == "qwen_math_cot"


def fake_run(tmp_path, steps, final_step):
    (tmp_path / "config.yaml").write_text("seed: 0\n")
    for s in steps:
        (tmp_path / "checkpoints" / f"checkpoint-{s}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"checkpoint-{s}" / "config.json").write_text("{}")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "summary.json").write_text(json.dumps({"steps": final_step}))
    return tmp_path


def test_find_checkpoints_orders_steps_and_adds_base_and_final(tmp_path):
    run = fake_run(tmp_path, [20, 100, 40], final_step=110)
    (run / "checkpoints" / "checkpoint-60").mkdir()  # half-written: no config.json, skipped
    found = find_checkpoints(run)
    assert [c.step for c in found] == [0, 20, 40, 100, 110]
    assert found[0].model is None and found[-1].model == str(run / "model")
    assert [c.step for c in find_checkpoints(run, include_base=False, every=40)] == [40, 110]
    with pytest.raises(UserError, match="not a training run"):
        find_checkpoints(tmp_path / "checkpoints")
    with pytest.raises(UserError, match="--every 0: .* needs N >= 1"):
        find_checkpoints(run, every=0)


def test_sweep_labels_a_benchmark_scored_twice(tmp_path):
    calls = []

    def evaluate(ckpt, part, out):
        calls.append((ckpt.step, part.tag, out.relative_to(tmp_path).as_posix()))
        return {"arithmetic": ckpt.step / 10 + (0.05 if part.tag == "greedy" else 0.0)}

    sel = sweep([Checkpoint(0, None), Checkpoint(2, "m")], CHECKPOINT_SUITES["synthetic"], tmp_path, evaluate)
    assert calls[1] == (0, "avg@8", "step-0/part-1")
    assert sel.scores[2] == {"arithmetic[greedy]": pytest.approx(0.25), "arithmetic[avg@8]": pytest.approx(0.2)}
    assert sel.best_step == 2


@pytest.mark.integration
def test_eval_checkpoints_on_a_real_run(toy_model_dir, tmp_path):
    """Train 1 step saving it, then evaluate base + checkpoint on the synthetic suite
    (8 held-out problems) through the real eval runner; re-running reuses the results."""
    from rlrecipes.rundir import write_manifest
    from rlrecipes.runs.checkpoints import eval_checkpoints
    from rlrecipes.training.job import train

    cfg = compose(
        "trainer.max_steps=1",
        "trainer.checkpoints.every=1",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        f"model.name_or_path={toy_model_dir}",
    )
    run = tmp_path / "run"
    run.mkdir()
    write_manifest(run, cfg)
    train(cfg, run, log=lambda _: None)
    overrides = ["limit=8", "progress=false", "grading.workers=0"]
    sel = eval_checkpoints(run, "synthetic", overrides, log=lambda _: None)
    assert sel.steps == [0, 1]
    for step in sel.steps:
        assert set(sel.scores[step]) == {"arithmetic[greedy]", "arithmetic[avg@8]"}
        assert all(0.0 <= v <= 1.0 for v in sel.scores[step].values())
    samples = (run / "checkpoint_eval_synthetic" / "step-1" / "part-1" / "samples.jsonl").read_text().splitlines()
    assert len(samples) == 8 and len(json.loads(samples[0])["completions"]) == 8  # avg@8
    written = json.loads((run / "checkpoint_eval_synthetic" / "checkpoint_eval.json").read_text())
    assert written["best_average"]["step"] == sel.best_step and written["last"]["step"] == 1
    again = eval_checkpoints(run, "synthetic", overrides, log=lambda _: None)  # resumes from disk
    assert again.scores == sel.scores
    with pytest.raises(UserError, match="holds results for other settings"):  # never mixes protocols
        eval_checkpoints(run, "synthetic", ["limit=4", "progress=false"], log=lambda _: None)
    with pytest.raises(UserError, match="unknown key 'nope'"):  # checked before any generation
        eval_checkpoints(run, "synthetic", ["nope=1"], out=tmp_path / "other", log=lambda _: None)


@pytest.mark.integration
def test_final_eval_scores_the_trained_model_into_the_run(toy_model_dir, tmp_path):
    from rlrecipes.training.job import train

    cfg = compose("trainer.max_steps=1", "trainer.eval.before=false", 'final_eval=["benchmark=arithmetic","limit=6"]')
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    evaluated = json.loads((tmp_path / "run" / "eval" / "summary.json").read_text())
    assert evaluated["model"] == str(tmp_path / "run" / "model")
    assert summary["final_eval"]["arithmetic"]["metric"] == "pass@1"
    assert 0.0 <= summary["final_eval"]["arithmetic"]["value"] <= 1.0
    assert len((tmp_path / "run" / "eval" / "samples.jsonl").read_text().splitlines()) == 6


def test_an_unwritable_out_is_one_line_before_any_evaluation(tmp_path, capsys, monkeypatch, unwritable_dir):
    import rlrecipes.runs.checkpoints as checkpoints

    run = fake_run(tmp_path, [20], final_step=30)
    evaluated = []
    monkeypatch.setattr(checkpoints, "run_eval", lambda *a, **k: evaluated.append(a))
    code, text = cli(capsys, "eval-checkpoints", str(run), "--suite", "synthetic", "--out", str(unwritable_dir / "ce"))
    assert code == 2 and f"cannot write {unwritable_dir / 'ce'}: " in one_error_line(text)
    assert "choose another --out" in text and evaluated == [] and "checkpoint 1/" not in text

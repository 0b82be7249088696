"""`rlrecipes stages`: a pipeline's stages run in order under one parent, the RL stage starts
from the SFT stage's model, and a resume after the second stage crashed keeps the first
stage untouched and continues the second from its checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlrecipes.errors import ConfigError
from tests.conftest import TINY

SETTINGS = [*TINY, "trainer.cpu_threads=1", "prime.trainer.max_steps=4", "rl.trainer.checkpoints.every=1"]


def stages(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rlrecipes.cli", "stages", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "250"},
    )


@pytest.mark.integration
def test_a_pipeline_runs_its_stages_and_resumes_after_the_second_crashed(toy_model_dir, tmp_path):
    from rlrecipes.integrity import content_digest

    parent = tmp_path / "pipeline"
    done = stages(f"run_dir={parent}", *SETTINGS, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    prime, rl = parent / "1-prime", parent / "2-rl"
    rl_config = (rl / "config.yaml").read_text()
    assert f"name_or_path: {prime / 'model'}" in rl_config and "max_steps: 2" in rl_config
    assert "max_steps: 4" in (prime / "config.yaml").read_text()  # prime.trainer.max_steps went to prime only
    summary = json.loads((parent / "summary.json").read_text())
    assert [(s["stage"], s["command"], s["steps"]) for s in summary["stages"]] == [
        ("prime", "sft", 4),
        ("rl", "train", 2),
    ]

    # what a crash of the RL stage after its step-1 checkpoint leaves
    kept = content_digest(prime)
    shutil.rmtree(rl / "checkpoints" / "checkpoint-2")
    shutil.rmtree(rl / "model")
    (rl / "summary.json").unlink()
    (parent / "summary.json").unlink()
    refused = stages("resume=true", f"run_dir={parent}", "seed=3", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stdout.strip().splitlines()[-1] == (
        "error: seed=3: resume=true continues a pipeline as it was started; leave the setting out"
    )
    resumed = stages("resume=true", f"run_dir={parent}", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    out = " ".join(resumed.stdout.split())
    assert "stage 1 (prime) finished already: kept" in out and "rlrecipes train resume=true" in out
    assert "from checkpoint-1" in (rl / "resumes.log").read_text()
    assert content_digest(prime) == kept  # nothing of the finished stage rewritten
    assert json.loads((rl / "summary.json").read_text())["steps"] == 2
    assert len(json.loads((parent / "summary.json").read_text())["stages"]) == 2


def test_stage_overrides_are_routed_and_checked_before_anything_runs():
    from rlrecipes.training.stages import compose_pipeline, plan

    cfg = compose_pipeline(["seed=2", "rl.trainer.max_steps=5", "run_dir=/tmp/x"])
    prime, rl = plan(cfg)
    assert prime.overrides == ("trainer.max_steps=60", "seed=2")
    assert rl.overrides == ("seed=2", "trainer.max_steps=5") and rl.model_from == "prime"
    assert rl.argv(Path("/p"), [prime, rl])[-2:] == ["model.name_or_path=/p/1-prime/model", "run_dir=/p/2-rl"]
    with pytest.raises(ConfigError, match="stage prime: model_from='rl' is not an earlier stage; earlier: none"):
        plan(compose_pipeline(["pipeline.stages.0.model_from=rl"]))
    with pytest.raises(ConfigError, match="stage name 'data' is a key of the sft config"):
        plan(compose_pipeline(["pipeline.stages.0.name=data"]))


# ------------------------------------------------------------------ the paper pipelines
PIPELINES = sorted(p.stem for p in (Path(__file__).parents[1] / "conf" / "pipeline").glob("*.yaml"))


def _stage_configs(*overrides: str):
    from rlrecipes.training.stages import compose_pipeline, plan, stage_config

    steps = plan(compose_pipeline(list(overrides)))
    return steps, [stage_config(s, Path("/p"), steps, for_check=True) for s in steps]


# what a user must add: QwenLong-L1's warm-up SFT data is not public (its header says so)
USER_DATA = {"qwenlong_l1_32b": ["warmup.data.path=warmup.jsonl", "warmup.data.completion_field=completion"]}


@pytest.mark.integration
@pytest.mark.parametrize("name", PIPELINES)
def test_every_pipeline_passes_the_dry_run(name, capsys):
    from rlrecipes.cli import main

    with pytest.raises(SystemExit) as done:
        main(["stages", f"pipeline={name}", *USER_DATA.get(name, []), "--dry-run"])
    out = capsys.readouterr().out
    assert done.value.code in (0, None), out
    assert "nothing was loaded or written" in out


def test_rm_r1_distills_then_runs_rlvr_from_the_distilled_model():
    """rm_r1/scripts/Distill/local/distill_qwen2.5-7b-instruct.sh at RM-R1-UIUC/RM-R1 d4c2542:
    --train_batch_size 128 (l.9), --max_epochs 1 (l.13), --max_len 12288 (l.14), --learning_rate
    5e-6 (l.16), --dataset (l.17), --input_key context_messages (l.19), --output_key winner (l.20);
    OpenRLHF's train_sft.py: cosine_with_min_lr to 0.1 x lr (l.106), warmup 0.03 (l.181), betas
    (0.9, 0.95) (l.185). The RLVR stage starts from the distilled model (RLVR script l.7)."""
    steps, (distill, rl) = _stage_configs("pipeline=rm_r1_qwen2_5_7b_instruct")
    assert [(s.name, s.command, s.model_from) for s in steps] == [("distill", "sft", None), ("rl", "train", "distill")]
    assert steps[1].argv(Path("/p"), steps)[-2] == "model.name_or_path=/p/1-distill/model"
    s, t, d = distill.sft, distill.trainer, distill.data
    assert (s.batch_size, s.epochs, s.max_length, s.completion_only_loss) == (128, 1, 12288, True)
    assert (t.learning_rate, t.lr_scheduler_type, dict(t.lr_scheduler_kwargs)) == (
        5e-6,
        "cosine_with_min_lr",
        {"min_lr_rate": 0.1},
    )
    assert (t.warmup_ratio, t.adam_beta1, t.adam_beta2, t.micro_batch_size) == (0.03, 0.9, 0.95, 1)
    assert (distill.model.name_or_path, d.source, d.path) == (
        "Qwen/Qwen2.5-7B-Instruct",
        "hub",
        "gaotang/RM-R1-Distill-SFT",
    )
    assert (d.problem_field, d.completion_field, d.messages_field) == ("context_messages", "winner", None)
    assert rl.experiment == "rm_r1_qwen2_5_7b_instruct" and rl.recipe.name == "j1"


@pytest.mark.parametrize("model", ["qwen2_5_3b", "llama3_2_3b"])
def test_cognitive_behaviors_primes_on_the_chosen_condition_then_runs_the_authors_rl(model):
    """kanishkg/cognitive-behaviors 9c90d33: scripts/sft.sh (batch 64 l.25, micro 8 l.24, 2048
    tokens l.26, 5 epochs l.31, query/completion l.22-23, data path l.19 + 36) with verl's
    sft_trainer.yaml (lr 1e-5 l.23, warm-up 0.1 l.26, weight decay 0.01 l.25); then
    scripts/train_tiny_zero_n4_cd.sh (256 prompts l.4, 4 samples l.15, mini-batch 128 l.10, lr
    1e-6 l.9, KL 0.001 l.20, 1024 response tokens l.7) as GRPO."""
    steps, (prime, rl) = _stage_configs(f"pipeline=cognitive_behaviors_{model}", "prime.data.name=only_backtracking")
    assert steps[1].model_from == "prime"
    s, t, d = prime.sft, prime.trainer, prime.data
    assert d.path == "cot_datasets/processed_data/only_backtracking/train.parquet"
    assert d.eval_path == "cot_datasets/processed_data/only_backtracking/test.parquet"
    assert (d.problem_field, d.completion_field, d.template) == ("query", "completion", "plain")
    assert (s.batch_size, t.micro_batch_size, s.max_length, s.epochs) == (64, 8, 2048, 5)
    assert (t.learning_rate, t.lr_scheduler_type, t.warmup_ratio, t.weight_decay) == (1e-5, "cosine", 0.1, 0.01)
    assert prime.model.name == rl.model.name == model
    r, t = rl.recipe, rl.trainer
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout, t.learning_rate) == (256, 4, 2, 1e-6)
    assert (r.name, r.beta, r.entropy_coef, t.max_completion_length) == ("grpo", 0.001, 0.001, 1024)
    assert [(x.name, x.weight) for x in r.rewards] == [("countdown", 1.0), ("behaviours", 0.0)]
    assert (rl.data.path, rl.data.problem_field, rl.data.template) == ("countdown/train.parquet", "prompt", "plain")


def test_a_pipeline_saved_before_keys_moved_resumes_its_stage_lines(tmp_path):
    """A parent run's config.yaml holds each stage's command line as written then; the old flat
    keys are read as the `recipe.dynamic_sampling` and `trainer.eval` nodes', with their values."""
    from rlrecipes.compose import compose_config
    from rlrecipes.rundir import write_manifest
    from rlrecipes.training.stages import saved_pipeline

    write_manifest(tmp_path, compose_config("stages", ["pipeline=qwenlong_l1_32b"]))
    text = (tmp_path / "config.yaml").read_text()
    for new, old in [
        ("recipe.dynamic_sampling.enabled=", "recipe.dynamic_sampling="),
        ("recipe.dynamic_sampling.filter=", "recipe.dynamic_sampling_filter="),
        ("recipe.dynamic_sampling.prompts_per_round=", "recipe.prompts_per_generation_round="),
        ("recipe.dynamic_sampling.max_rounds=", "recipe.max_generation_rounds="),
        ("trainer.eval.before=", "trainer.eval_before="),
        ("trainer.eval.after=", "trainer.eval_after="),
    ]:
        assert new in text
        text = text.replace(new, old)
    (tmp_path / "config.yaml").write_text(text)
    saved = saved_pipeline(tmp_path).pipeline.stages
    rl = [s for s in saved if "recipe.dynamic_sampling.filter=docqa" in s.overrides]
    assert len(rl) == 2  # the RL phases
    for stage in rl:
        assert {
            "recipe.dynamic_sampling.enabled=true",
            "recipe.dynamic_sampling.prompts_per_round=384",
            "recipe.dynamic_sampling.max_rounds=10",
        } <= set(stage.overrides)
        assert not any("generation_round" in ov or "sampling_filter" in ov for ov in stage.overrides)
    phase1 = next(s for s in saved if s.name == "phase1")
    assert {"trainer.eval.before=false", "trainer.eval.after=false"} <= set(phase1.overrides)
    assert not any(ov.startswith(("trainer.eval_before", "trainer.eval_after")) for ov in phase1.overrides)


def test_the_dry_run_prints_each_stage_setting_once_with_the_value_it_runs_with(monkeypatch):
    """A preset's `trainer.max_steps=60` then the command line's `prime.trainer.max_steps=5`: the
    plan shows the 5 alone (Hydra's last value), and a key every stage gets once per stage."""
    import io

    from omegaconf import OmegaConf
    from rich.console import Console

    from rlrecipes.commands import stages as command
    from rlrecipes.training.stages import Stage

    console = Console(width=200, file=io.StringIO(), color_system=None)
    monkeypatch.setattr(command, "console", console)
    steps = [
        Stage(1, "prime", "sft", ("trainer.max_steps=60", "seed=1", "+trainer.max_steps=5"), None),
        Stage(2, "rl", "train", ("trainer.max_steps=60", "seed=1", "seed=2"), "prime"),
    ]
    cfg = OmegaConf.create({"pipeline": {"name": "p"}, "output_root": "out", "resume": False})
    command.print_plan(cfg, steps, Path("/parent"))
    rows = [line.split("│") for line in console.file.getvalue().splitlines() if line.startswith("│")]
    lines = {row[1].split()[1]: row[2].split() for row in rows}
    assert lines["prime"] == ["rlrecipes", "sft", "seed=1", "+trainer.max_steps=5", "run_dir=/parent/1-prime"]
    assert lines["rl"] == [
        "rlrecipes",
        "train",
        "trainer.max_steps=60",
        "seed=2",
        "model.name_or_path=/parent/1-prime/model",
        "run_dir=/parent/2-rl",
    ]
    assert command.once(["a=1", "~b", "a=2", "c=[1,2]", "b=3"]) == ["~b", "a=2", "c=[1,2]", "b=3"]

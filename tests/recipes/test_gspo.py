"""GSPO: the recipe's TRL settings, its sequence ratio through TRL's own loss on a hand-made
batch (2 groups x 3 completions of unequal lengths, values by hand), GSPO-token's ratio, the
refusals, the dry run, and a tiny run on the toy."""

import json
import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.config.checks import check_train_values
from rlrecipes.engine.gspo_token import sequence_token_logps, sequence_token_ratio
from rlrecipes.errors import ConfigError
from tests.conftest import cli, compose, one_error_line

GSPO = ("recipe=gspo", "trainer.updates_per_rollout=4")


def test_recipe_is_trls_gspo_settings():
    r = compose(*GSPO).recipe
    assert (r.importance_sampling_level, r.epsilon, r.epsilon_high) == ("sequence", 3e-4, 4e-4)
    assert (r.loss_type, r.beta, r.scale_rewards) == ("grpo", 0.0, "group")


def test_recipe_maps_onto_trl(tmp_path):
    from rlrecipes.engine.grpo_args import build_grpo_config

    args = build_grpo_config(compose(*GSPO), tmp_path, {}, [1.0])
    assert (args.importance_sampling_level, args.loss_type, args.beta) == ("sequence", "grpo", 0.0)
    assert (args.epsilon, args.epsilon_high, args.sequence_token_ratio) == (3e-4, 4e-4, False)
    assert args.steps_per_generation == 4 * args.gradient_accumulation_steps  # 4 updates per rollout
    token = build_grpo_config(compose(*GSPO, "recipe.importance_sampling_level=sequence_token"), tmp_path, {}, [1.0])
    assert (token.importance_sampling_level, token.sequence_token_ratio) == ("token", True)


# ---------------------------------------------------------------- TRL's loss on a hand-made batch
def trl_loss(logps, old, advantages, mask, level, sequence_token=False, eps=(3e-4, 4e-4)):
    """TRL 1.16's `GRPOTrainer._compute_loss` (loss_type grpo) on these tensors: (loss, d loss / d logps)."""
    from trl import GRPOTrainer

    logps = logps.clone().requires_grad_()
    fake = SimpleNamespace(
        loss_type="grpo",
        epsilon_low=eps[0],
        epsilon_high=eps[1],
        beta=0.0,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level=level,
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=1,
        model=SimpleNamespace(training=True),
        args=SimpleNamespace(delta=None, steps_per_generation=1, sequence_token_ratio=sequence_token),
        accelerator=SimpleNamespace(num_processes=1, reduce=lambda x, reduction: x, gather=lambda x: x),
        _metrics=defaultdict(lambda: defaultdict(list)),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros_like(logps), None),
    )
    B, T = logps.shape
    inputs = {
        "prompt_ids": torch.ones(B, 1, dtype=torch.long),
        "prompt_mask": torch.ones(B, 1, dtype=torch.long),
        "completion_ids": torch.ones(B, T, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        "old_per_token_logps": old,
    }
    with sequence_token_ratio(fake, inputs):
        loss = GRPOTrainer._compute_loss(fake, None, inputs)
    loss.backward()
    return loss.item(), logps.grad


# Two groups of three completions; every token's log-prob is -1 and its old log-prob -1 - d, so its
# log-ratio is d. Completion lengths 3, 2, 1 | 3, 2, 2 (padding d = 9, which must not count).
D = torch.tensor(
    [
        [0.2, -0.2, 0.0],  # A = +1   mean 0    s = 1         unclipped
        [0.3, 0.1, 9.0],  # A = -1   mean 0.2  s = e^0.2     above 1.0004; A < 0: the unclipped sA is taken
        [0.1, 9.0, 9.0],  # A = +1   mean 0.1  s = e^0.1     above 1.0004; A > 0: clipped to 1.0004
        [-0.4, 0.0, -0.2],  # A = -1 mean -0.2 s = e^-0.2    below 0.9997; A < 0: clipped to 0.9997
        [-0.1, -0.3, 9.0],  # A = +1 mean -0.2 s = e^-0.2    A > 0: the unclipped sA is taken
        [0.0, 0.0, 9.0],  # A = -0.5 mean 0    s = 1         unclipped
    ]
)
MASK = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 0], [1, 1, 0]])
ADV = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -0.5])
LOGPS = torch.full((6, 3), -1.0)
OLD = LOGPS - D
# Eq. 5, -min(s A, clip(s, 1 - 3e-4, 1 + 4e-4) A) per completion, then the mean over the 6:
TERMS = [-1.0, math.exp(0.2), -1.0004, 0.9997, -math.exp(-0.2), 0.5]
# d/d logp_t of -s A with s = exp(mean_t logp_t - old_t): -A s / |y| for each of its tokens, / 6;
# clipped completions (2 and 3) and padding get none
GRAD = [
    [-1 / 3 / 6] * 3,
    [math.exp(0.2) / 2 / 6] * 2 + [0.0],
    [0.0] * 3,
    [0.0] * 3,
    [-math.exp(-0.2) / 2 / 6] * 2 + [0.0],
    [0.5 / 2 / 6] * 2 + [0.0],
]


def test_sequence_ratio_on_unequal_lengths_by_hand():
    loss, grad = trl_loss(LOGPS, OLD, ADV, MASK, "sequence")
    assert loss == pytest.approx(sum(TERMS) / 6, abs=1e-6)
    assert grad.tolist() == [pytest.approx(row, abs=1e-6) for row in GRAD]
    # the direction: raise the likelihood of completions with A > 0 that are not clipped, lower A < 0's
    assert (grad[0] < 0).all() and (grad[1, :2] > 0).all() and (grad[4, :2] < 0).all()
    # token-level ratios on the same batch: another loss (completion 1's tokens are clipped one by one)
    assert trl_loss(LOGPS, OLD, ADV, MASK, "token")[0] != pytest.approx(loss, abs=1e-4)


def test_gspo_token_equals_gspo_when_a_completion_shares_one_advantage():
    loss, grad = trl_loss(LOGPS, OLD, ADV, MASK, "token", sequence_token=True)
    assert loss == pytest.approx(sum(TERMS) / 6, abs=1e-6)
    assert grad.tolist() == [pytest.approx(row, abs=1e-6) for row in GRAD]


def test_gspo_token_weighs_each_tokens_gradient_by_its_own_advantage():
    """One completion of 3 tokens, log-ratios 0.1, -0.1, 0 (s = 1, nothing clipped), per-token
    advantages 3, 0, 0. GSPO-token: d/d logp_t = -s A_t / 3 = -1, 0, 0. GSPO's sequence ratio
    spreads the completion's mean term: each token gets -(1/3) s (3 + 0 + 0) / 3 = -1/3."""
    logps = torch.full((1, 3), -1.0)
    old = logps - torch.tensor([[0.1, -0.1, 0.0]])
    mask, adv = torch.ones(1, 3, dtype=torch.long), torch.tensor([[3.0, 0.0, 0.0]])
    _, token_grad = trl_loss(logps, old, adv, mask, "token", sequence_token=True, eps=(0.2, 0.2))
    assert token_grad.tolist() == [pytest.approx([-1.0, 0.0, 0.0], abs=1e-6)]
    _, sequence_grad = trl_loss(logps, old, adv, mask, "sequence", eps=(0.2, 0.2))
    assert sequence_grad.tolist() == [pytest.approx([-1 / 3] * 3, abs=1e-6)]


def test_sequence_token_logps_carry_the_sequence_value_and_the_token_gradient():
    logps = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    old = torch.tensor([[-1.3, -2.1, -3.5]])  # log-ratios 0.3, 0.1, 0.5 (the last is padding)
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    out = sequence_token_logps(logps, old, mask)
    # value: old + mean(0.3, 0.1) = old + 0.2, on every position
    assert (out - old).tolist() == [pytest.approx([0.2, 0.2, 0.2], abs=1e-6)]
    out.sum().backward()
    assert logps.grad.tolist() == [[1.0, 1.0, 1.0]]  # each position's own log-prob, weight 1


# ------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize(
    "overrides, message",
    [
        (("recipe=gspo",), "recipe.importance_sampling_level=sequence changes nothing when every update is on-policy"),
        (
            (*GSPO, "recipe.loss_type=dapo"),
            "recipe.loss_type=dapo needs recipe.importance_sampling_level=token, not sequence",
        ),
        (
            (*GSPO, "recipe.importance_sampling_level=sequence_token", "recipe.beta=0.01"),
            "recipe.beta reads the policy's log-probs",
        ),
    ],
)
def test_gspo_settings_that_cannot_work_are_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        check_train_values(compose(*overrides))


def test_dry_run_prints_the_trl_settings_and_the_engine_options(capsys):
    code, out = cli(capsys, "train", "--dry-run", *GSPO, "recipe.importance_sampling_level=sequence_token")
    assert code == 0, out
    flat = " ".join(out.replace("│", " ").split())  # the table wraps long cells
    assert "loss_type=grpo beta=0.0 epsilon=0.0003 / 0.0004" in flat
    assert "importance_sampling_level=sequence_token (GSPO-token" in flat
    assert "4 update(s) of 16" in flat  # 8 prompts x 8 completions, in 4 updates
    code, out = cli(capsys, "train", "--dry-run", "recipe=gspo")
    assert code != 0 and "trainer.updates_per_rollout=4" in one_error_line(out)


# ------------------------------------------------------------------------------ end to end
@pytest.mark.integration
def test_tiny_gspo_run_clips_whole_completions(toy_model_dir, tmp_path):
    """4 updates per rollout: the first is on-policy (every ratio 1, nothing clipped); the
    rest see the moved policy. TRL logs its clip shares per completion (one value each)."""
    from rlrecipes.training.job import train

    cfg = compose(*GSPO, "trainer.eval.before=false", "trainer.eval.after=false")
    summary = train(cfg, tmp_path, log=lambda _: None)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "clip_ratio_region" in r]
    assert summary["steps"] == 2 and len(steps) == 2
    assert steps[0]["clip_ratio_region"] == 0.0  # on-policy: s_i = 1 exactly
    assert all(math.isfinite(r["loss"]) for r in steps)

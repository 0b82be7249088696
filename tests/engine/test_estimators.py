"""Advantage estimators (rlrecipes/engine/advantages.py) and the hook that writes them into TRL's scored
batch (rlrecipes/engine/estimators.py), every value computed here by hand.

The batch: 2 groups x 3 completions, rewards [1, 0, 0 | 1, 1, 0] (group 1 has one correct
answer), loss tokens per completion [3, 2, 1 | 2, 3, 1] (the mask of test_policy_loss.py).
Its loss: TRL's own GRPOTrainer._compute_loss with the estimator's advantages, on-policy
(ratio 1), so the loss is -sum A / normaliser and each token's gradient -A_i / normaliser:
the gradient pushes a token's log-probability up exactly where its completion's A is positive.
"""

from __future__ import annotations

import math

import pytest
import torch

from rlrecipes.engine.advantages import (
    maxrl_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
    sample_reinforcement_advantages,
)
from rlrecipes.engine.estimators import EstimatedAdvantages
from rlrecipes.errors import UserError
from tests.engine.test_policy_loss import LOGPS, MASK, fake_trainer

REWARDS = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 0.0])
TOKENS = torch.tensor([3.0, 2.0, 1.0, 2.0, 3.0, 1.0])
NAN = float("nan")


# --------------------------------------------------------------------------------- RLOO
def test_rloo_leave_one_out_on_a_group_with_one_correct_answer():
    # group 1: 1 - (0 + 0)/2 = 1; 0 - (1 + 0)/2 = -0.5 twice
    # group 2: 1 - (1 + 0)/2 = 0.5 twice; 0 - (1 + 1)/2 = -1
    assert rloo_advantages(REWARDS, 3).tolist() == pytest.approx([1, -0.5, -0.5, 0.5, 0.5, -1])
    # = k/(k-1) (r - mean): group 1's mean-centred [2/3, -1/3, -1/3] times 3/2, no further scale


def test_rloo_leaves_unscorable_completions_out_of_the_baseline():
    # row 1 unscored: group 1 has k = 2, so 1 - 0 = 1 and 0 - 1 = -1; a lone scorable row has no baseline
    rewards = torch.tensor([1.0, NAN, 0.0, NAN, NAN, 1.0])
    assert rloo_advantages(rewards, 3).tolist() == pytest.approx([1, 0, -1, 0, 0, 0])


# -------------------------------------------------------------------- REINFORCE++-baseline
# Group-centred: [2/3, -1/3, -1/3 | 1/3, 1/3, -2/3]. Token-weighted mean over 12 tokens:
# (3(2/3) - 2(1/3) - 1(1/3) + 2(1/3) + 3(1/3) - 1(2/3)) / 12 = 2 / 12 = 1/6.
# Deviations: [1/2, -1/2, -1/2, 1/6, 1/6, -5/6]; variance (3/4 + 2/4 + 1/4 + 2/36 + 3/36 + 25/36) / 12
# = (54 + 30) / 36 / 12 = 7/36, std sqrt(7)/6. A = deviation x 6/sqrt(7):
REINFORCE_PP = [
    3 / math.sqrt(7),
    -3 / math.sqrt(7),
    -3 / math.sqrt(7),
    1 / math.sqrt(7),
    1 / math.sqrt(7),
    -5 / math.sqrt(7),
]


def test_reinforce_pp_whitens_over_tokens_after_the_group_mean():
    advantages, mean, std = reinforce_pp_advantages(REWARDS, 3, TOKENS)
    assert advantages.tolist() == pytest.approx(REINFORCE_PP, abs=1e-6)
    assert (mean, std) == pytest.approx((1 / 6, math.sqrt(7) / 6), abs=1e-6)
    # per token, the advantages have mean 0: 3(3) - 2(3) - 1(3) + 2(1) + 3(1) - 1(5) = 0
    assert float((advantages * TOKENS).sum()) == pytest.approx(0, abs=1e-6)


def test_reinforce_pp_weighs_by_tokens_not_completions():
    # equal lengths: the plain mean of the centred rewards (0) and their biased std sqrt(2/9)
    advantages, mean, _ = reinforce_pp_advantages(REWARDS, 3, torch.ones(6))
    assert mean == pytest.approx(0, abs=1e-7)
    assert advantages[0].item() == pytest.approx((2 / 3) / math.sqrt(2 / 9), abs=1e-6)
    # a batch with no spread: the variance floor 1e-8 keeps it finite, 0 stays 0
    flat, _, std = reinforce_pp_advantages(torch.ones(6), 3, TOKENS)
    assert flat.tolist() == [0.0] * 6 and std == 0


# --------------------------------------------------------------------------------- MaxRL
def test_maxrl_divides_by_the_pass_rate():
    # group 1: mean 1/3, (1 - 1/3) / (1/3) = 2, (0 - 1/3) / (1/3) = -1; group 2: mean 2/3: 0.5, 0.5, -1
    got = maxrl_advantages(REWARDS, 3)
    assert got.tolist() == pytest.approx([2, -1, -1, 0.5, 0.5, -1], rel=1e-5)
    # the authors' eps: (2/3) / (1/3 + 1e-6), not exactly 2
    assert got[0].item() == pytest.approx((2 / 3) / (1 / 3 + 1e-6), rel=1e-7)
    # a group that solved nothing gives 0, not a division by zero
    assert maxrl_advantages(torch.zeros(3), 3).tolist() == [0.0, 0.0, 0.0]


# ------------------------------------------------------------------ PSR / NSR / W-REINFORCE
def test_sample_reinforcement_weights():
    nsr = sample_reinforcement_advantages(REWARDS, 0.0, 1.0)
    assert nsr.tolist() == [0, -1, -1, 0, 0, -1]  # correct samples untouched
    assert sample_reinforcement_advantages(REWARDS, 0.1, 1.0).tolist() == pytest.approx([0.1, -1, -1, 0.1, 0.1, -1])
    assert sample_reinforcement_advantages(REWARDS, 1.0, 0.0).tolist() == [1, 0, 0, 1, 1, 0]  # PSR
    assert sample_reinforcement_advantages(torch.tensor([NAN, 1.0]), 0.1, 1.0).tolist() == pytest.approx([0, 0.1])


# ------------------------------------------------------- the loss TRL computes with them
def trl_loss_with(advantages: torch.Tensor, loss_type: str) -> tuple[float, list[list[float]]]:
    """GRPOTrainer._compute_loss on the 6-completion batch, on-policy (old log-probs = log-probs)."""
    from trl import GRPOTrainer

    logps = torch.tensor(LOGPS).requires_grad_()
    trainer = fake_trainer(loss_type, logps, torch.zeros(6, 3))
    inputs = {
        "prompt_ids": torch.ones(6, 1, dtype=torch.long),
        "prompt_mask": torch.ones(6, 1, dtype=torch.long),
        "completion_ids": torch.ones(6, 3, dtype=torch.long),
        "completion_mask": MASK.long(),
        "advantages": advantages,
        "num_items_in_batch": torch.tensor(12.0),
    }
    loss = GRPOTrainer._compute_loss(trainer, None, inputs)
    loss.backward()
    return loss.item(), logps.grad.tolist()


@pytest.mark.parametrize(
    "name,advantages,loss_type,loss",
    [
        # dapo: -sum_i L_i A_i / 12 tokens: -(3 - 1 - 0.5 + 1 + 1.5 - 1) / 12
        ("rloo", [1, -0.5, -0.5, 0.5, 0.5, -1], "dapo", -3 / 12),
        # whitened per token: sum L_i A_i = 0
        ("reinforce_pp", REINFORCE_PP, "dapo", 0.0),
        # bnpo, one micro-batch: -(6 - 2 - 1 + 1 + 1.5 - 1) / 12
        ("maxrl", [2, -1, -1, 0.5, 0.5, -1], "bnpo", -4.5 / 12),
        # -(0 - 2 - 1 + 0 + 0 - 1) / 12
        ("nsr", [0, -1, -1, 0, 0, -1], "dapo", 4 / 12),
        # W-REINFORCE: -(0.3 - 2 - 1 + 0.2 + 0.3 - 1) / 12
        ("w_reinforce", [0.1, -1, -1, 0.1, 0.1, -1], "dapo", 3.2 / 12),
    ],
)
def test_trl_loss_and_gradient_direction_with_each_estimator(name, advantages, loss_type, loss):
    got, grad = trl_loss_with(torch.tensor(advantages, dtype=torch.float32), loss_type)
    assert got == pytest.approx(loss, abs=1e-6)
    for row, adv in enumerate(advantages):
        for t in range(3):
            # -A / 12 on each loss token (gradient descent raises log pi where A > 0), 0 on padding
            want = -adv / 12 if MASK[row, t] else 0.0
            assert grad[row][t] == pytest.approx(want, abs=1e-7), (name, row, t)
    if name == "nsr":  # lambda = 0: the correct completions get no gradient at all
        assert all(g == 0 for row in (0, 3, 4) for g in grad[row])


# ------------------------------------------------------------------------------ the hook
def scored(trainer, estimator: str, rewards: torch.Tensor, process: int = 0, **kwargs) -> dict:
    """The hook on this process's half of the batch (3 rows) with `rewards` for all 6."""
    trainer.num_generations = 3
    trainer.reward_weights = torch.tensor([1.0])
    trainer.accelerator.process_index = process
    trainer.accelerator.gather = lambda local: TOKENS  # every process's token counts
    rows = slice(3 * process, 3 * process + 3)
    batch = {"completion_ids": torch.ones(3, 3), "completion_mask": MASK[rows], "advantages": torch.zeros(3)}
    return EstimatedAdvantages(estimator, **kwargs).after_scoring(trainer, batch, rewards.unsqueeze(1))


def test_hook_writes_this_process_rows_of_the_global_advantages():
    trainer = fake_trainer("dapo", None, None)
    assert scored(trainer, "rloo", REWARDS, process=1)["advantages"].tolist() == pytest.approx([0.5, 0.5, -1])
    out = scored(trainer, "reinforce_pp", REWARDS, process=1)["advantages"]
    assert out.tolist() == pytest.approx(REINFORCE_PP[3:], abs=1e-6)
    assert scored(trainer, "nsr", REWARDS, psr_weight=0.1)["advantages"].tolist() == pytest.approx([0.1, -1, -1])
    metrics = trainer._metrics["train"]
    # the leave-one-out baselines r - A: [0, 0.5, 0.5, 0.5, 0.5, 1], mean 0.5
    assert metrics["rloo/baseline_mean"] == [pytest.approx(0.5)]
    assert metrics["reinforce_pp/whiten_std"] == [pytest.approx(math.sqrt(7) / 6)]
    assert metrics["nsr/correct_fraction"] == [pytest.approx(0.5)]
    scored(trainer, "maxrl", torch.tensor([1.0, 0, 0, 0, 0, 0]))
    # one group of two solved (pass rate 1/3): 1/p = 3
    assert metrics["maxrl/solved_groups"] == [0.5] and metrics["maxrl/inverse_pass_rate"] == [pytest.approx(3)]


def test_hook_leaves_evaluation_batches_alone():
    trainer = fake_trainer("dapo", None, None)
    trainer.model.training = False
    assert scored(trainer, "rloo", REWARDS)["advantages"].tolist() == [0, 0, 0]


def test_hook_refuses_rewards_its_estimator_cannot_read():
    trainer = fake_trainer("dapo", None, None)
    with pytest.raises(UserError, match=r"recipe=nsr .* must be 0 or 1 \(got 0.5\)"):
        scored(trainer, "nsr", torch.tensor([1.0, 0.5, 0, 0, 1, 0]))
    with pytest.raises(UserError, match=r"recipe=maxrl .* rewards must be >= 0 \(got -1\)"):
        scored(trainer, "maxrl", torch.tensor([1.0, -1, 0, 0, 1, 0]))

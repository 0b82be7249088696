"""PPO's formulas (rlrecipes/engine/gae.py), each against numbers worked out by hand here:
GAE on a 4-token trajectory, the token-level rewards with the KL penalty, verl's KL
estimators, whitening over every process, the clipped value loss and verl's warm-up."""

import math
import threading

import pytest
import torch

from rlrecipes.engine.gae import (
    gae,
    kl_penalty,
    last_token_index,
    masked_whiten,
    token_level_rewards,
    value_loss,
    verl_warmup_factor,
)


def close(tensor: torch.Tensor, expected: list) -> None:
    torch.testing.assert_close(tensor.float(), torch.tensor(expected, dtype=torch.float32), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------ GAE
# Row 0: 4 valid tokens, the outcome reward 1 on the last; values 0.5, 0.2, -0.1, 0.4.
# gamma 0.9, lambda 0.8 (gamma lambda = 0.72):
#   delta_3 = 1 + 0.9 * 0 - 0.4           =  0.6      A_3 = 0.6
#   delta_2 = 0 + 0.9 * 0.4 - (-0.1)      =  0.46     A_2 = 0.46 + 0.72 * 0.6     =  0.892
#   delta_1 = 0 + 0.9 * (-0.1) - 0.2      = -0.29     A_1 = -0.29 + 0.72 * 0.892  =  0.35224
#   delta_0 = 0 + 0.9 * 0.2 - 0.5         = -0.32     A_0 = -0.32 + 0.72 * 0.35224 = -0.0663872
#   returns A + V: 0.4336128, 0.55224, 0.792, 1.0
# Row 1: 3 valid tokens (the 4th is padding, its critic output 9.0 must not bootstrap), reward 0.5
# on token 2; values 0.3, 0.1, 0.2:
#   delta_2 = 0.5 + 0 - 0.2 = 0.3           A_2 = 0.3
#   delta_1 = 0 + 0.9 * 0.2 - 0.1 = 0.08    A_1 = 0.08 + 0.72 * 0.3   = 0.296
#   delta_0 = 0 + 0.9 * 0.1 - 0.3 = -0.21   A_0 = -0.21 + 0.72 * 0.296 = 0.00312
#   returns: 0.30312, 0.396, 0.5, 0
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
VALUES = torch.tensor([[0.5, 0.2, -0.1, 0.4], [0.3, 0.1, 0.2, 9.0]])
REWARDS = torch.tensor([[0.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.5, 0.0]])


def test_gae_on_a_four_token_trajectory_by_hand():
    advantages, returns = gae(REWARDS, VALUES, MASK, gamma=0.9, lam=0.8)
    close(advantages, [[-0.0663872, 0.35224, 0.892, 0.6], [0.00312, 0.296, 0.3, 0.0]])
    close(returns, [[0.4336128, 0.55224, 0.792, 1.0], [0.30312, 0.396, 0.5, 0.0]])


def test_gae_with_gamma_and_lambda_one_is_the_return_minus_the_value():
    # the papers' setting: A_t = (sum of rewards from t on) - V_t; row 0: 1 - V_t
    advantages, returns = gae(REWARDS, VALUES, MASK, gamma=1.0, lam=1.0)
    assert advantages[0].tolist() == pytest.approx([0.5, 0.8, 1.1, 0.6])
    assert advantages[1].tolist() == pytest.approx([0.2, 0.4, 0.3, 0.0])
    close(returns, [[1.0, 1.0, 1.0, 1.0], [0.5, 0.5, 0.5, 0.0]])


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    advantages, _ = gae(REWARDS, VALUES, MASK, gamma=0.9, lam=0.0)
    assert advantages[0].tolist() == pytest.approx([-0.32, -0.29, 0.46, 0.6])


# --------------------------------------------------------------- token rewards
def test_the_outcome_score_sits_on_the_last_valid_token():
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0], [0, 0, 0, 0]])
    assert last_token_index(mask).tolist() == [3, 2, -1]
    rewards = token_level_rewards(torch.tensor([1.0, 0.5, 7.0]), mask)
    # a completion with no valid token (masked truncated one) gets nothing
    close(rewards, [[0, 0, 0, 1.0], [0, 0, 0.5, 0], [0, 0, 0, 0]])


def test_kl_penalty_enters_the_rewards_of_the_tokens_the_model_wrote():
    # kl already zeroed where the model did not write (row 1: token 1 is a tool result, token 3 padding)
    written = torch.tensor([[1, 1, 1, 1], [1, 0, 1, 0]])
    kl = torch.tensor([[0.1, -0.2, 0.3, 0.05], [0.2, 9.0, 0.4, 0.7]]) * written
    rewards = token_level_rewards(torch.tensor([1.0, 0.5]), MASK, kl, kl_coef=0.5)
    # row 0: -0.5 kl, and 1 - 0.5 * 0.05 = 0.975 on the last; row 1: 0.5 - 0.5 * 0.4 = 0.3 on token 2
    close(rewards, [[-0.05, 0.1, -0.15, 0.975], [-0.1, 0.0, 0.3, 0.0]])


@pytest.mark.parametrize(
    "kind, above, below",  # log pi_old - log pi_ref = +0.5 (above) and -0.5 (below)
    [
        ("kl", 0.5, -0.5),
        ("abs", 0.5, 0.5),
        ("mse", 0.125, 0.125),
        # k3 = e^(ref - old) - (ref - old) - 1: e^-0.5 + 0.5 - 1 and e^0.5 - 0.5 - 1
        ("low_var_kl", 0.6065306597 - 0.5, 1.6487212707 - 1.5),
    ],
)
def test_verl_kl_estimators_by_hand(kind, above, below):
    old, ref = torch.tensor([-1.0, -1.5]), torch.tensor([-1.5, -1.0])
    assert kl_penalty(old, ref, kind).tolist() == pytest.approx([above, below])


def test_low_var_kl_is_clamped_at_ten():
    assert kl_penalty(torch.tensor([-20.0]), torch.tensor([0.0]), "low_var_kl").item() == 10.0


# ------------------------------------------------------------------ whitening
def test_whitening_uses_the_valid_tokens_and_the_unbiased_variance():
    # valid 1, 2, 3: mean 2, unbiased variance (1 + 0 + 1) / 2 = 1; the padding 10 is ignored and left 0
    got = masked_whiten(torch.tensor([[1.0, 2.0], [3.0, 10.0]]), torch.tensor([[1, 1], [1, 0]]))
    close(got, [[-1.0, 0.0], [1.0, 0.0]])


def test_whitening_on_two_processes_uses_the_statistics_of_both():
    """Two threads stand for two processes, `reduce` for the all-reduce: process A holds 1, 2 and
    process B holds 3 (and padding); whitened together they give -1, 0 | 1, as one process does.
    Whitened alone, A's would be -0.7071, 0.7071 (mean 1.5, variance 0.5)."""
    barrier, posted = threading.Barrier(2), {}

    def all_reduce(rank):
        def reduce(tensor):
            posted[rank] = tensor.clone()
            barrier.wait()
            total = posted[0] + posted[1]
            barrier.wait()
            return total

        return reduce

    data = {
        0: (torch.tensor([[1.0, 2.0]]), torch.tensor([[1, 1]])),
        1: (torch.tensor([[3.0, 10.0]]), torch.tensor([[1, 0]])),
    }
    out = {}

    def run(rank):
        out[rank] = masked_whiten(*data[rank], reduce=all_reduce(rank))

    threads = [threading.Thread(target=run, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    close(out[0], [[-1.0, 0.0]])
    close(out[1], [[1.0, 0.0]])
    close(masked_whiten(*data[0]), [[-math.sqrt(0.5), math.sqrt(0.5)]])


# ------------------------------------------------------------------ value loss
# V_old 0, 1, 2; V 0.8, 1.3, 1.0; returns 1, 0, 1; clip 0.5:
#   token 0: V_clip = 0 + clamp(0.8) = 0.5: (0.8-1)^2 = 0.04 < (0.5-1)^2 = 0.25 -> 0.25, clipped
#   token 1: V_clip = 1.3 (inside):        (1.3-0)^2 = 1.69 = 1.69               -> 1.69
#   token 2: V_clip = 2 - 0.5 = 1.5:        (1.0-1)^2 = 0    < (1.5-1)^2 = 0.25   -> 0.25, clipped
# loss = 0.5 * (0.25 + 1.69 + 0.25) / 3 = 0.365, clipped share 2/3; the clipped tokens get no
# gradient (V_clip is constant there), token 1 gets 0.5 * 2 * 1.3 / 3 = 1.3 / 3.
def test_clipped_value_loss_by_hand():
    predicted = torch.tensor([[0.8, 1.3, 1.0]], requires_grad=True)
    old, returns = torch.tensor([[0.0, 1.0, 2.0]]), torch.tensor([[1.0, 0.0, 1.0]])
    loss, clipped = value_loss(predicted, old, returns, torch.ones(1, 3), clip=0.5)
    assert loss.item() == pytest.approx(0.365) and clipped.item() == pytest.approx(2 / 3)
    loss.backward()
    close(predicted.grad, [[0.0, 1.3 / 3, 0.0]])


def test_value_loss_is_a_token_mean_over_the_mask():
    predicted, old, returns = (
        torch.tensor([[0.8, 1.3, 1.0]]),
        torch.tensor([[0.0, 1.0, 2.0]]),
        torch.tensor([[1.0, 0.0, 1.0]]),
    )
    loss, clipped = value_loss(predicted, old, returns, torch.tensor([[1, 1, 0]]), clip=0.5)
    assert loss.item() == pytest.approx(0.5 * (0.25 + 1.69) / 2) and clipped.item() == pytest.approx(1 / 2)


def test_a_wide_clip_range_is_the_plain_squared_error():
    predicted, old, returns = (
        torch.tensor([[0.8, 1.3, 1.0]]),
        torch.tensor([[0.0, 1.0, 2.0]]),
        torch.tensor([[1.0, 0.0, 1.0]]),
    )
    loss, clipped = value_loss(predicted, old, returns, torch.ones(1, 3), clip=100.0)
    assert loss.item() == pytest.approx(0.5 * (0.04 + 1.69 + 0.0) / 3) and clipped.item() == 0.0


# ------------------------------------------------------------------ schedule
@pytest.mark.parametrize(
    "step, warmup, factor",
    [(0, 0, 0.0), (1, 0, 1.0), (0, 15, 0.0), (3, 15, 0.2), (15, 15, 1.0), (40, 15, 1.0)],
)
def test_verl_constant_schedule_with_warmup(step, warmup, factor):
    # min(1, step / max(1, warmup)): verl's first update is at factor 0, even without warm-up
    assert verl_warmup_factor(step, warmup) == pytest.approx(factor)

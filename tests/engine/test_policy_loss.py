"""The engine's own policy losses (rlrecipes/engine/policy_objectives.py): Clip-Cov, KL-Cov and GMPO
on a hand-made batch, every number computed here by hand; and the engine's loss path
(rlrecipes/engine/policy_loss.py), which must aggregate exactly as TRL does (checked against
GRPOTrainer._compute_loss itself).

The batch: 2 groups x 3 completions, T = 3 positions, 12 valid tokens (lengths 3, 2, 1, 2, 3, 1).

    row   A      log pi (valid)          log pi - log pi_old     ratio
    0     1      -0.5  -1.0  -2.5        -0.2   0     0           e^-0.2 = 0.818731, 1, 1
    1    -0.5    -1.0  -0.5              -0.6   0                 e^-0.6 = 0.548812, 1
    2    -0.5    -2.0                     0.5                     e^0.5  = 1.648721
    3     0.5    -0.5  -1.5               0     0                 1, 1
    4     0.5    -1.0  -0.5  -0.5         0     0     ln 1.5      1, 1, 1.5
    5    -1      -0.5                     0                       1

(A: the RLOO advantages of rewards [1, 0, 0 | 1, 1, 0], test_estimators.py.)
Token means over the 12 valid tokens: mean A = (3 - 1 - 0.5 + 1 + 1.5 - 1) / 12 = 0.25;
mean log pi = -12 / 12 = -1. Covariance (A - 0.25)(log pi + 1):
    row 0 (+0.75): 0.375  0      -1.125
    row 1 (-0.75): 0     -0.375
    row 2 (-0.75): 0.75
    row 3 (+0.25): 0.125 -0.125
    row 4 (+0.25): 0      0.125   0.125
    row 5 (-1.25): -0.625
"""

from __future__ import annotations

import math
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine import policy_loss, policy_objectives
from rlrecipes.engine.hooks import EngineHook
from rlrecipes.engine.policy_loss import TokenBatch, aggregate
from rlrecipes.engine.policy_objectives import clip_cov_loss, gmpo_loss, kl_cov_loss

MASK = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 0, 0]], dtype=torch.float32)
LOGPS = [[-0.5, -1.0, -2.5], [-1.0, -0.5, 0.0], [-2.0, 0.0, 0.0], [-0.5, -1.5, 0.0], [-1.0, -0.5, -0.5], [-0.5, 0, 0]]
LOG_RATIO = [[-0.2, 0, 0], [-0.6, 0, 0], [0.5, 0, 0], [0, 0, 0], [0, 0, math.log(1.5)], [0, 0, 0]]
ADVANTAGES = [1.0, -0.5, -0.5, 0.5, 0.5, -1.0]


def make_batch(advantages=ADVANTAGES) -> TokenBatch:
    logps = torch.tensor(LOGPS).requires_grad_()
    old = torch.tensor(LOGPS) - torch.tensor(LOG_RATIO)
    return TokenBatch(logps=logps, old_logps=old, advantages=torch.tensor(advantages).unsqueeze(1), mask=MASK)


def grad_of(loss: torch.Tensor, batch: TokenBatch) -> list[list[float]]:
    loss.backward()
    return batch.logps.grad.tolist()


def bnpo(per_token: torch.Tensor) -> torch.Tensor:
    return aggregate(per_token, MASK, "bnpo", accumulation=1)[0]


# ------------------------------------------------------------------------------- Clip-Cov
# PPO's loss max(-A r, -A clip(r, 0.8, 1.2)) per token:
#   row 0: -0.818731 (r 0.818731 is inside [0.8, 1.2]), -1, -1
#   row 1: 0.4 (r 0.548812 < 0.8 with A < 0: clipped, -A r = 0.274406 < 0.4), 0.5
#   row 2: 0.824361 (r 1.648721 with A < 0 is not clipped: 0.824361 > 0.6)
#   row 3: -0.5, -0.5     row 4: -0.5, -0.5, -0.6 (r 1.5 with A > 0: clipped)     row 5: 1
# Sum: -2.818731 + 0.9 + 0.824361 - 1 - 1.6 + 1 = -2.694370.
# Candidates, covariance in (0.1, 0.5) and not clipped by PPO, row-major:
#   (0,0) 0.375, (3,0) 0.125, (4,1) 0.125; (4,2) 0.125 is clipped by PPO, (2,0) 0.75 is above.
# clip_ratio 0.2 of 12 tokens: int(2.4) = 2 of the 3 are cut, drawn by torch.randperm.
PPO_LOSS = {(0, 0): -0.818731, (3, 0): -0.5, (4, 1): -0.5}
CANDIDATES = [(0, 0), (3, 0), (4, 1)]


def test_clip_cov_cuts_exactly_the_drawn_candidates():
    batch = make_batch()
    loss, cut = clip_cov_loss(batch, 0.2, 0.2, 0.2, 0.1, 0.5, generator=torch.Generator().manual_seed(7))
    # the draw: the code's own torch.randperm call on the same seed, over the 3 candidates
    drawn = [CANDIDATES[i] for i in torch.randperm(3, generator=torch.Generator().manual_seed(7))[:2].tolist()]
    assert sorted(map(tuple, cut.nonzero().tolist())) == sorted(drawn)
    total = bnpo(loss)
    assert total.item() == pytest.approx((-2.694370 - sum(PPO_LOSS[t] for t in drawn)) / 12, abs=1e-6)
    grad = grad_of(total, batch)
    for i, j in drawn:  # no loss, no gradient
        assert loss[i, j].item() == 0 and grad[i][j] == 0
    # the PPO-clipped tokens have no gradient either; every other valid token -A r / 12
    assert grad[1][0] == 0 and grad[4][2] == 0
    kept = {(0, 1): -1 / 12, (0, 2): -1 / 12, (2, 0): 0.5 * 1.648721 / 12, (5, 0): 1 / 12}
    for (i, j), value in kept.items():
        assert grad[i][j] == pytest.approx(value, abs=1e-6)
    # the candidate left undrawn keeps PPO's gradient, -A r / 12
    (undrawn,) = [t for t in CANDIDATES if t not in drawn]
    candidate_grad = {(0, 0): -0.818731 / 12, (3, 0): -0.5 / 12, (4, 1): -0.5 / 12}
    assert grad[undrawn[0]][undrawn[1]] == pytest.approx(candidate_grad[undrawn], abs=1e-6)


def test_clip_cov_cuts_at_least_one_token_and_only_candidates():
    # clip_ratio 1e-4 of 12 tokens: int(0.0012) = 0, raised to 1
    _, cut = clip_cov_loss(make_batch(), 0.2, 0.2, 1e-4, 0.1, 0.5, generator=torch.Generator().manual_seed(0))
    assert int(cut.sum()) == 1 and tuple(cut.nonzero()[0].tolist()) in CANDIDATES
    # a window no token's covariance falls in: nothing is cut, the loss is PPO's
    loss, cut = clip_cov_loss(make_batch(), 0.2, 0.2, 0.5, 2.0, 5.0)
    assert not cut.any() and bnpo(loss).item() == pytest.approx(-2.694370 / 12, abs=1e-6)
    # clip_ratio 1: every candidate is cut, and nothing else (not (4,2), which PPO clipped)
    _, cut = clip_cov_loss(make_batch(), 0.2, 0.2, 1.0, 0.1, 0.5)
    assert sorted(map(tuple, cut.nonzero().tolist())) == CANDIDATES
    # the bounds are exclusive: (0.125, 0.5) leaves only (0,0) at 0.375
    _, cut = clip_cov_loss(make_batch(), 0.2, 0.2, 1.0, 0.125, 0.5)
    assert cut.nonzero().tolist() == [[0, 0]]


# -------------------------------------------------------------------------------- KL-Cov
# No clipping: -A r per token, row 1 t0 0.5 x 0.548812 = 0.274406, row 4 t2 -0.5 x 1.5 = -0.75.
# Top 2 by covariance (k 0.2 of 12 tokens: int(2.4) = 2): (2,0) 0.75 and (0,0) 0.375.
# Each gets + 1 x |log-ratio|: (0,0) -0.818731 + 0.2 = -0.618731, (2,0) 0.824361 + 0.5 = 1.324361.
# Sum: (-0.618731 - 2) + (0.274406 + 0.5) + 1.324361 - 1 + (-1 - 0.75) + 1 = -2.269964.
def test_kl_cov_penalises_exactly_the_top_covariance_tokens():
    batch = make_batch()
    loss, chosen = kl_cov_loss(batch, 0.2, 1.0)
    assert sorted(chosen.nonzero().tolist()) == [[0, 0], [2, 0]]
    total = bnpo(loss)
    assert total.item() == pytest.approx(-2.269964 / 12, abs=1e-6)
    grad = grad_of(total, batch)
    # d/dlog pi of -A e^d + |d|: -A e^d + sign(d)
    assert grad[0][0] == pytest.approx((-0.818731 - 1) / 12, abs=1e-6)
    assert grad[2][0] == pytest.approx((0.824361 + 1) / 12, abs=1e-6)
    # unclipped elsewhere: row 1 t0 keeps its gradient 0.5 x 0.548812 (PPO would clip it)
    assert grad[1][0] == pytest.approx(0.274406 / 12, abs=1e-6)
    assert grad[4][2] == pytest.approx(-0.75 / 12, abs=1e-6)
    assert grad[1][2] == 0 and grad[2][1] == 0  # padding


def test_kl_cov_penalises_at_least_one_token_and_nothing_on_policy():
    _, chosen = kl_cov_loss(make_batch(), 0.002, 1.0)  # int(0.024) = 0, raised to 1: the top one
    assert chosen.nonzero().tolist() == [[2, 0]]
    on_policy = TokenBatch(torch.tensor(LOGPS), torch.tensor(LOGPS), torch.tensor(ADVANTAGES).unsqueeze(1), MASK)
    loss, _ = kl_cov_loss(on_policy, 0.2, 1.0)  # |log-ratio| = 0: the plain -A
    assert bnpo(loss).item() == pytest.approx(-(3 - 1 - 0.5 + 1 + 1.5 - 1) / 12, abs=1e-6)


# ---------------------------------------------------------------------------------- GMPO
# Log-ratios clipped at +0.4 when A >= 0, at -0.4 when A < 0, then their mean per completion:
#   row 0 (A 1):    -0.2, 0, 0              mean -0.066667  ratio 0.935507  loss -0.935507
#   row 1 (A -0.5): -0.6 -> -0.4, 0          mean -0.2       ratio 0.818731  loss  0.409365
#   row 2 (A -0.5): 0.5 (kept: only below -0.4 is clipped)  ratio 1.648721  loss  0.824361
#   row 3 (A 0.5):  0, 0                                     ratio 1         loss -0.5
#   row 4 (A 0.5):  0, 0, ln 1.5 = 0.405465 -> 0.4  mean 0.133333  ratio 1.142631  loss -0.571315
#   row 5 (A -1):   0                                        ratio 1         loss  1
# Mean over the 6 completions: 0.226904 / 6 = 0.037817. Gradient of -A exp(mean d') per token:
# -A ratio / L / 6 where d' was not clipped, 0 where it was.
GMPO_ROWS = [-0.935507, 0.409365, 0.824361, -0.5, -0.571315, 1.0]


def test_gmpo_geometric_mean_on_unequal_lengths():
    batch = make_batch()
    loss, clipped = gmpo_loss(batch, 0.4)
    assert loss.squeeze(1).tolist() == pytest.approx(GMPO_ROWS, abs=1e-6)
    assert sorted(clipped.nonzero().tolist()) == [[1, 0], [4, 2]]
    total = aggregate(loss, MASK, "grpo", accumulation=1)[0]
    assert total.item() == pytest.approx(sum(GMPO_ROWS) / 6, abs=1e-6)
    grad = grad_of(total, batch)
    expected = [
        [-0.935507 / 3 / 6] * 3,
        [0.0, 0.5 * 0.818731 / 2 / 6, 0.0],
        [0.5 * 1.648721 / 6, 0.0, 0.0],
        [-0.5 / 2 / 6, -0.5 / 2 / 6, 0.0],
        [-0.5 * 1.142631 / 3 / 6, -0.5 * 1.142631 / 3 / 6, 0.0],
        [1 / 6, 0.0, 0.0],
    ]
    for got, want in zip(grad, expected):
        assert got == pytest.approx(want, abs=1e-6)
    # the geometric mean of the (clipped) token ratios: row 0 is (e^-0.2 x 1 x 1)^(1/3)
    assert -loss[0, 0].item() == pytest.approx(math.exp(-0.2) ** (1 / 3), abs=1e-6)


# ------------------------------------------------- the engine's loss path against TRL's own
def fake_trainer(loss_type: str, logps: torch.Tensor, entropies: torch.Tensor, **settings) -> SimpleNamespace:
    """What GRPOTrainer._compute_loss and policy_loss.compute_loss read of a trainer, on one process."""
    from trl import GRPOTrainer

    metrics: dict = defaultdict(lambda: defaultdict(list))
    trainer = SimpleNamespace(
        loss_type=loss_type,
        epsilon_low=0.2,
        epsilon_high=settings.get("epsilon_high", 0.2),
        beta=settings.get("beta", 0.0),
        top_entropy_quantile=settings.get("top_entropy_quantile", 1.0),
        off_policy_mask_threshold=settings.get("off_policy_mask_threshold"),
        importance_sampling_level="token",
        use_vllm=settings.get("vllm_correction", False),
        vllm_importance_sampling_correction=settings.get("vllm_correction", False),
        entropy_coef=settings.get("entropy_coef", 0.0),
        use_adaptive_entropy=False,
        _entropy_bonus_enabled=settings.get("entropy_coef", 0.0) != 0.0,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=settings.get("accumulation", 1),
        max_completion_length=3,
        model=SimpleNamespace(training=True),
        args=SimpleNamespace(
            delta=None, steps_per_generation=settings.get("steps_per_generation", 1), use_bias_correction_kl=False
        ),
        accelerator=SimpleNamespace(
            num_processes=1,
            process_index=0,
            sync_gradients=True,
            reduce=lambda x, reduction: x,
            gather=lambda x: x.reshape(-1),
            pad_across_processes=lambda x, dim, pad_index: x,
        ),
        _metrics=metrics,
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, entropies, None),
    )
    trainer.log_metric = lambda name, value: metrics["train"][name].append(float(value))
    trainer.get_high_entropy_mask = lambda *args: GRPOTrainer.get_high_entropy_mask(trainer, *args)
    trainer.get_off_policy_mask = GRPOTrainer.get_off_policy_mask
    return trainer


class PPOSurrogate(EngineHook):
    """TRL's own clipped surrogate, as a loss hook: the engine's path must then give TRL's loss."""

    def policy_loss(self, trainer, batch):
        ratio = torch.exp(batch.logps - batch.old_logps)
        clipped = torch.clamp(ratio, 1 - trainer.epsilon_low, 1 + trainer.epsilon_high)
        return -torch.min(ratio * batch.advantages, clipped * batch.advantages)


def inputs_for(loss_type: str) -> dict:
    return {
        "prompt_ids": torch.ones(6, 1, dtype=torch.long),
        "prompt_mask": torch.ones(6, 1, dtype=torch.long),
        "completion_ids": torch.ones(6, 3, dtype=torch.long),
        "completion_mask": MASK.long(),
        "advantages": torch.tensor(ADVANTAGES),
        "old_per_token_logps": torch.tensor(LOGPS) - torch.tensor(LOG_RATIO),
        "ref_per_token_logps": torch.tensor(LOGPS) - 0.1,
        "num_items_in_batch": torch.tensor(24.0),  # the rollout batch's tokens, over 2 micro-steps
        # vLLM's side: its log-probs (for the off-policy mask) and TRL's clipped importance ratio
        "sampling_per_token_logps": torch.tensor(LOGPS) - 0.3 * torch.tensor(LOG_RATIO),
        "importance_sampling_ratio": torch.tensor([[1.1, 0.9, 1.0]] * 6),
    }


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo"])
@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"beta": 0.04, "entropy_coef": 0.01, "accumulation": 2, "steps_per_generation": 2},
        # the masks and weights TRL puts on any loss: top-entropy tokens, off-policy sequences, vLLM's ratio
        {"top_entropy_quantile": 0.5, "off_policy_mask_threshold": 0.05, "vllm_correction": True, "entropy_coef": 0.01},
    ],
)
def test_engine_loss_path_aggregates_as_trl(loss_type, settings):
    from trl import GRPOTrainer

    results = []
    for run in ("trl", "engine"):
        logps = torch.tensor(LOGPS).requires_grad_()
        entropies = torch.tensor([[0.5, 1.0, 1.5]] * 6)
        trainer = fake_trainer(loss_type, logps, entropies, **settings)
        inputs = inputs_for(loss_type)
        if run == "trl":
            loss = GRPOTrainer._compute_loss(trainer, None, inputs)
        else:
            loss = policy_loss.compute_loss(trainer, None, inputs, PPOSurrogate())
        loss.backward()
        results.append((loss.item(), logps.grad.clone(), dict(trainer._metrics["train"])))
    (trl_loss, trl_grad, trl_metrics), (loss, grad, metrics) = results
    assert loss == pytest.approx(trl_loss, abs=1e-7)
    assert torch.allclose(grad, trl_grad, atol=1e-7)
    for key in ("entropy", "kl", "policy_loss"):
        assert metrics.get(key) == pytest.approx(trl_metrics.get(key), abs=1e-7), key


def test_aggregate_normalisers_by_hand():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    # grpo: mean of the completions' token means, (1.5 + 5) / 2, / accumulation 2
    assert aggregate(per_token, mask, "grpo", accumulation=2)[0].item() == pytest.approx(3.25 / 2)
    # bnpo: 18 / 5 tokens / 2
    assert aggregate(per_token, mask, "bnpo", accumulation=2)[0].item() == pytest.approx(1.8)
    # dr_grpo: 18 / (2 completions x max_completion_length 4) / 2
    assert aggregate(per_token, mask, "dr_grpo", accumulation=2, max_completion_length=4)[0].item() == pytest.approx(
        18 / 8 / 2
    )
    # dapo: 18 / (20 tokens / 2 processes x 2 accumulation / 4 steps per generation) = 18 / 5
    dapo = aggregate(
        per_token,
        mask,
        "dapo",
        accumulation=2,
        tokens_in_batch=torch.tensor(20.0),
        num_processes=2,
        steps_per_generation=4,
    )
    assert dapo[0].item() == pytest.approx(3.6)
    # a loss per completion (B, 1) counts once per completion under grpo: (1 + 4) / 2
    assert aggregate(per_token[:, :1], mask, "grpo", accumulation=1)[0].item() == pytest.approx(2.5)


def test_one_policy_loss_per_run():
    class Other(EngineHook):
        def policy_loss(self, trainer, batch):
            return None

    hook = policy_objectives.GMPO(0.4)
    assert policy_loss.loss_hook_of([EngineHook(), hook]) is hook
    assert policy_loss.loss_hook_of([EngineHook()]) is None
    with pytest.raises(Exception, match="two policy losses in one run"):
        policy_loss.loss_hook_of([hook, Other()])


def test_hooks_log_their_share_of_tokens():
    trainer = fake_trainer("bnpo", None, None)
    batch = make_batch()
    policy_objectives.KLCov(0.2, 1.0).policy_loss(trainer, batch)
    policy_objectives.GMPO(0.4).policy_loss(trainer, make_batch())
    metrics = trainer._metrics["train"]
    assert metrics["kl_cov/penalised_tokens"] == [pytest.approx(2 / 12)]
    # mean |log-ratio| over the 12 tokens: (0.2 + 0.6 + 0.5 + ln 1.5) / 12
    assert metrics["kl_cov/abs_log_ratio"] == [pytest.approx((1.3 + math.log(1.5)) / 12)]
    assert metrics["gmpo/clipped_tokens"] == [pytest.approx(2 / 12)]

"""policy_shift: the step's KL(before ‖ after) on its own micro-batch (engine/policy_shift.py)."""

import math

import pytest
import torch

from rlrecipes.engine.policy_shift import PolicyShift, k3_kl


def test_k3_is_the_mean_of_r_minus_1_minus_log_r_over_the_counted_tokens():
    before = torch.log(torch.tensor([[0.5, 0.25, 0.9]], dtype=torch.float64))
    after = torch.log(torch.tensor([[0.25, 0.5, 0.01]], dtype=torch.float64))
    # r = 1/2: 1/2 - 1 + ln 2; r = 2: 2 - 1 - ln 2; their mean is exactly 1/4 (the third token is masked)
    assert k3_kl(before, after, torch.tensor([[1, 1, 0]])) == pytest.approx(0.25, rel=1e-12)
    assert k3_kl(before, after, torch.tensor([[1, 0, 0]])) == pytest.approx(math.log(2) - 0.5, rel=1e-12)
    assert k3_kl(before, after, torch.zeros(1, 3)) is None


def test_k3_of_a_tiny_step_keeps_its_digits():
    # log r = 1e-7: (r - 1) - log r = 5e-15; exp(x) - 1 in float32 would round it to 0 or to 1e-8
    before = torch.zeros(1, 1)
    assert k3_kl(before, before + 1e-7, torch.ones(1, 1)) == pytest.approx(5e-15, rel=1e-3)


@pytest.mark.parametrize("every, probed", [(1, [0, 1, 2, 3]), (2, [0, 1, 3]), (0, [])])
def test_the_first_step_and_every_nth_are_probed(every, probed):
    shift = PolicyShift(trainer=None, every=every)
    assert [step for step in range(4) if shift.due(step)] == probed  # steps done before the probed one


@pytest.mark.parametrize("value, ok", [(0, True), (3, True), (-1, False)])
def test_policy_shift_every_is_checked_and_reaches_the_trainer(value, ok, tmp_path):
    from rlrecipes.config.checks import check_train_values
    from rlrecipes.engine.grpo_args import build_grpo_config
    from rlrecipes.errors import ConfigError
    from tests.conftest import compose

    cfg = compose(f"trainer.policy_shift_every={value}")
    if not ok:
        with pytest.raises(ConfigError, match=r"^trainer.policy_shift_every=-1 must be at least 0$"):
            check_train_values(cfg)
        return
    check_train_values(cfg)
    assert build_grpo_config(cfg, tmp_path, {}, [1.0]).policy_shift_every == value

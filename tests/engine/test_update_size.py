"""update_ratio: ‖Δθ‖/‖θ‖ of the optimiser step, read from AdamW's state (engine/update_size.py)."""

import math

import pytest
import torch

from rlrecipes.engine.update_size import adamw_update_ratio


def stepped(params, grads, **adamw):
    optimizer = torch.optim.AdamW(params, **adamw)
    for p, g in zip(params, grads):
        p.grad = None if g is None else torch.tensor(g, dtype=p.dtype)
    optimizer.step()
    return optimizer


def test_one_step_by_hand():
    # t=1: m̂ = g, v̂ = g², so the Adam term is lr·g/(|g|+ε) = ±0.1; decay moves θ by -lr·wd·θ = -0.001·θ
    # Δθ = [-0.003 - 0.1, -0.004 + 0.1] = [-0.103, 0.096]; ‖Δθ‖ = √0.019825; ‖θ_old‖ = 5
    theta = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    optimizer = stepped([theta], [[1.0, -1.0]], lr=0.1, weight_decay=0.01, eps=1e-8)
    assert adamw_update_ratio(optimizer) == pytest.approx(math.sqrt(0.019825) / 5, rel=1e-6)


def test_it_is_the_step_the_weights_took_over_many_steps_and_groups():
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(50, dtype=torch.float64))
    b = torch.nn.Parameter(torch.randn(7, 3, dtype=torch.float64))
    optimizer = torch.optim.AdamW(
        [{"params": [a], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0, "lr": 0.03}], lr=0.01
    )
    for _ in range(5):
        before = [a.detach().clone(), b.detach().clone()]
        a.grad, b.grad = torch.randn_like(a), torch.randn_like(b)
        optimizer.step()
        moved = sum(((p.detach() - old) ** 2).sum() for p, old in zip((a, b), before))
        size = sum((old**2).sum() for old in before)
        assert adamw_update_ratio(optimizer) == pytest.approx(math.sqrt(moved / size), rel=1e-9)


def test_a_parameter_without_a_gradient_did_not_move_and_is_left_out():
    moving = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    frozen = torch.nn.Parameter(torch.tensor([100.0]))
    optimizer = stepped([moving, frozen], [[1.0, -1.0], [1.0]], lr=0.1, weight_decay=0.0)
    frozen.grad = None  # the next step has no gradient for it: AdamW skips it
    moving.grad = torch.tensor([1.0, -1.0])
    optimizer.step()
    # t=2, same gradient: m̂ = g, v̂ = g², the Adam term is again ±0.1, ‖Δθ‖ = 0.1·√2 over ‖θ_old‖
    old = torch.tensor([3.0, 4.0]) - 0.1 * torch.tensor([1.0, -1.0])
    assert adamw_update_ratio(optimizer) == pytest.approx(0.1 * math.sqrt(2) / old.norm().item(), rel=1e-5)


def test_other_optimisers_and_no_step_log_nothing():
    theta = torch.nn.Parameter(torch.tensor([1.0]))
    theta.grad = torch.tensor([1.0])
    sgd = torch.optim.SGD([theta], lr=0.1)
    sgd.step()
    assert adamw_update_ratio(sgd) is None
    assert adamw_update_ratio(stepped([theta], [[1.0]], amsgrad=True)) is None
    assert adamw_update_ratio(torch.optim.AdamW([torch.nn.Parameter(torch.ones(2))])) is None  # no step yet
    l2 = torch.optim.Adam([theta], weight_decay=0.1)  # L2 decay enters m and v: another formula
    l2.step()
    assert adamw_update_ratio(l2) is None


def test_a_large_tensor_is_read_in_pieces_with_the_same_result(monkeypatch):
    from rlrecipes.engine import update_size

    torch.manual_seed(1)
    theta = torch.nn.Parameter(torch.randn(1000, dtype=torch.float64))
    optimizer = stepped([theta], [torch.randn(1000).tolist()], lr=0.01, weight_decay=0.05)
    whole = adamw_update_ratio(optimizer)
    monkeypatch.setattr(update_size, "CHUNK", 64)
    assert adamw_update_ratio(optimizer) == pytest.approx(whole, rel=1e-12)


def test_the_processes_sums_are_reduced_before_the_ratio():
    theta = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    optimizer = stepped([theta], [[1.0, -1.0]], lr=0.1, weight_decay=0.0)
    # another process held a shard that did not move and whose squared norm is 75: ‖θ‖ = √(25 + 75) = 10
    ratio = adamw_update_ratio(optimizer, reduce=lambda sums: sums + torch.tensor([0.0, 75.0, 1.0], dtype=sums.dtype))
    assert ratio == pytest.approx(0.1 * math.sqrt(2) / 10, rel=1e-6)

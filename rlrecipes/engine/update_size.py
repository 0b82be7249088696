"""How far each optimiser step moves the weights: `update_ratio` = ‖Δθ‖ / ‖θ‖ over the trained
parameters, logged every step.

Why: a learning rate past what the policy tolerates (a warm-up to too high a rate, a schedule
sized for another run) makes every step move the weights further, and the reward, the entropy and
the gradient norm stay flat until the policy breaks (the doctor's zoo: a warm-up to 5e-3 over 80
steps collapses at steps 45-61 with all three flat before). The relative size of the step is the
quantity that grows before the collapse.

It is read from AdamW's own state after the step, so it costs no copy of the weights. torch's
AdamW (the `adamw_torch` and `adamw_torch_fused` optimisers, and TRL's default) moves a parameter by

    Δθ = −lr·wd·θ_old − a,   a = lr/(1−β1^t) · m / (√v/√(1−β2^t) + ε)   (Loshchilov & Hutter 2019, Alg. 2)

with m, v and t the state after the step. From θ_new = θ_old + Δθ: θ_old = (θ_new + a)/(1 − lr·wd)
and Δθ = −lr·wd/(1 − lr·wd) · (θ_new + a) − a, never a difference of two nearly equal weights
(float32 would round a 1e-7 relative step away). Other optimisers (Adafactor, 8-bit and paged
AdamW, DeepSpeed's own) and AMSGrad log nothing: their step is another formula.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
from transformers import TrainerCallback

CHUNK = 1 << 22  # elements per piece of a large tensor (an embedding): bounded temporary memory


def adamw_update_ratio(optimizer: Any, reduce: Any = None) -> Optional[float]:
    """‖Δθ‖/‖θ_old‖ of the step `optimizer` (torch AdamW, or accelerate's wrapper of one) just took,
    over the parameters it updated (those with a gradient); None for another optimiser or no step.
    `reduce`: sums the two squared norms over processes whose optimisers hold shards (FSDP)."""
    optimizer = getattr(optimizer, "optimizer", optimizer)  # accelerate's AcceleratedOptimizer
    if not isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):  # AdamW subclasses Adam only in newer torch
        return None
    moved = torch.zeros((), dtype=torch.float64)
    size = torch.zeros((), dtype=torch.float64)
    stepped = False
    for group in optimizer.param_groups:
        if group.get("amsgrad") or group.get("maximize"):
            return None
        decoupled = isinstance(optimizer, torch.optim.AdamW) or group.get("decoupled_weight_decay", False)
        if group["weight_decay"] and not decoupled:  # Adam's L2 decay enters m and v instead
            return None
        lr, wd, eps = float(group["lr"]), float(group["weight_decay"]), float(group["eps"])
        beta1, beta2 = group["betas"]
        for param in group["params"]:
            state = optimizer.state.get(param)
            if param.grad is None or not state or "exp_avg" not in state:
                continue  # no gradient this step: AdamW left it where it was
            t = float(state["step"])
            scale = lr / (1 - beta1**t)
            root_bias = math.sqrt(1 - beta2**t)
            shrink = lr * wd / (1 - lr * wd)
            pieces = zip(
                param.detach().reshape(-1).split(CHUNK),
                state["exp_avg"].reshape(-1).split(CHUNK),
                state["exp_avg_sq"].reshape(-1).split(CHUNK),
            )
            exact = torch.promote_types(param.dtype, torch.float32)  # bf16 weights: in float32
            for new, m, v in pieces:
                new, m, v = new.to(exact), m.to(exact), v.to(exact)
                adam = scale * m / (v.sqrt() / root_bias + eps)
                old = (new + adam) / (1 - lr * wd)
                delta = -shrink * (new + adam) - adam
                moved += delta.double().square().sum().cpu()
                size += old.double().square().sum().cpu()
                stepped = True
    sums = torch.stack([moved, size, torch.tensor(float(stepped), dtype=torch.float64)])
    if reduce is not None:
        sums = reduce(sums)
    if not sums[2] or not sums[1]:
        return None
    return math.sqrt(float(sums[0]) / float(sums[1]))


class UpdateSize(TrainerCallback):
    """Logs `update_ratio` with the step's metrics (RecipeGRPOTrainer.log_metric)."""

    def __init__(self, trainer: Any):
        self.trainer = trainer

    def on_optimizer_step(self, args: Any, state: Any, control: Any, optimizer: Any = None, **kwargs: Any) -> None:
        trainer = self.trainer
        if trainer.accelerator.optimizer_step_was_skipped:  # fp16's inf/NaN step: nothing moved
            return
        reduce = None
        if trainer.is_fsdp_enabled:  # each process's optimiser holds its shard of the weights

            def reduce(sums: torch.Tensor) -> torch.Tensor:
                device = trainer.accelerator.device
                return trainer.accelerator.reduce(sums.to(device), reduction="sum").cpu()

        ratio = adamw_update_ratio(optimizer, reduce)
        if ratio is not None:
            trainer.log_metric("update_ratio", ratio)

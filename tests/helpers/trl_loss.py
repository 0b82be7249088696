"""TRL's clipped GRPO loss on a hand-made two-completion batch, without a model.

Tests of loss settings (clip-higher, token vs sequence aggregation, no clipping) call
`GRPOTrainer._compute_loss` with the per-token log-probs handed in, so the values they
assert can be computed by hand from the ratios alone.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import torch

# Old log-probs are 0, so each token's ratio is exp(new log-prob). Completion 0 has
# advantage +1 and three tokens, completion 1 advantage -1 and two (its third is padding).
RATIOS = [[1.10, 1.27, 1.29], [0.70, 1.30, 1.0]]


def compute_trl_loss(
    loss_type: str,
    logps: torch.Tensor,
    mask: torch.Tensor,
    advantages: torch.Tensor,
    epsilon_low: float = 0.2,
    epsilon_high: float = 0.2,
    old_logps: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict]:
    """TRL 1.16's `GRPOTrainer._compute_loss` on hand-made tensors, with a stand-in trainer (no
    KL, no entropy term, no vLLM, one process, no accumulation): the loss, with gradients back
    to `logps`, and the metrics it logged. Old log-probs default to 0 (ratio = exp(logps))."""
    from trl import GRPOTrainer

    rows, tokens = logps.shape
    fake = SimpleNamespace(
        loss_type=loss_type,
        epsilon_low=epsilon_low,
        epsilon_high=epsilon_high,
        beta=0.0,
        top_entropy_quantile=1.0,
        off_policy_mask_threshold=None,
        importance_sampling_level="token",
        use_vllm=False,
        vllm_importance_sampling_correction=False,
        _entropy_bonus_enabled=False,
        aux_loss_enabled=False,
        current_gradient_accumulation_steps=1,
        max_completion_length=tokens,
        model=SimpleNamespace(training=True),
        args=SimpleNamespace(delta=None, steps_per_generation=1),
        accelerator=SimpleNamespace(num_processes=1, reduce=lambda x, reduction: x, gather=lambda x: x),
        _metrics=defaultdict(lambda: defaultdict(list)),
        _get_per_token_logps_and_entropies=lambda *a, **k: (logps, torch.zeros(rows, tokens), None),
    )
    inputs = {
        "prompt_ids": torch.ones(rows, 1, dtype=torch.long),
        "prompt_mask": torch.ones(rows, 1, dtype=torch.long),
        "completion_ids": torch.ones(rows, tokens, dtype=torch.long),
        "completion_mask": mask,
        "advantages": advantages,
        "num_items_in_batch": mask.sum().float(),
        "old_per_token_logps": torch.zeros(rows, tokens) if old_logps is None else old_logps,
    }
    return GRPOTrainer._compute_loss(fake, None, inputs), fake._metrics["train"]


def trl_loss(loss_type: str, epsilon_low: float, epsilon_high: float) -> tuple[float, torch.Tensor, dict]:
    """TRL 1.16's `GRPOTrainer._compute_loss` on the batch above: the loss, d loss / d log-prob
    per token, and the metrics it logged."""
    logps = torch.tensor(RATIOS).log().requires_grad_()
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    loss, metrics = compute_trl_loss(loss_type, logps, mask, torch.tensor([1.0, -1.0]), epsilon_low, epsilon_high)
    loss.backward()
    return loss.item(), logps.grad, metrics

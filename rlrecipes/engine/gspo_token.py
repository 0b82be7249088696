"""GSPO-token's importance ratio on TRL's token-level loss (`recipe.importance_sampling_level=sequence_token`).

GSPO (Zheng et al. 2025, arXiv 2507.18071) weighs a completion by its sequence ratio
s_i = exp(mean_t log pi(y_t) / pi_old(y_t)) (Eq. 7), TRL's `importance_sampling_level="sequence"`.
GSPO-token (§4.3) gives every token that value with the token's own gradient,

    s_{i,t} = sg[s_i] * pi(y_t) / sg[pi(y_t)],   i.e.   log s_{i,t} = sg[log s_i] + log pi(y_t) - sg[log pi(y_t)],

which is how verl computes GSPO (volcengine/verl@b178a3c verl/trainer/ppo/core_algos.py
`compute_policy_loss_gspo`, l.1290-1298). The two agree in value, clipping and gradient when a
completion's tokens share one advantage (§4.3); they differ under per-token advantages
(PPO's GAE), where each token's gradient is then weighted by its own advantage.

TRL 1.16 has the token and the sequence ratio only. Its token ratio is exp(log pi' - log pi_old)
of the log-probs its forward pass returns; handing it

    log pi'(y_t) = log pi_old(y_t) + sg[log s_i] + log pi(y_t) - sg[log pi(y_t)]

makes that ratio s_{i,t} exactly, so TRL's clipping, masks and aggregation stay its own. What
reads log pi' as a value besides the ratio is refused with this level (config/checks.py): the KL
term (recipe.beta) and the off-policy mask; CISPO's and VESPO's losses take the token ratio only
(their levels are checked too). verl also caps log s_{i,t} at 10 before exponentiating; TRL
caps nothing, and with GSPO's clip range (3e-4, 4e-4) the cap only bounds the unclipped side of
a negative advantage.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch


def sequence_token_logps(logps: torch.Tensor, old_logps: torch.Tensor | None, mask: torch.Tensor) -> torch.Tensor:
    """Log-probs whose token ratio against `old_logps` is GSPO-token's s_{i,t}: the value
    old + log s_i, the gradient of `logps` (B, T). `old_logps` None: on-policy, as TRL takes it."""
    if old_logps is None:
        old_logps = logps.detach()
    log_ratio = (logps.detach() - old_logps) * mask
    log_s = log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1.0)
    return old_logps + log_s + (logps - logps.detach())


@contextmanager
def sequence_token_ratio(trainer: Any, inputs: dict[str, Any]) -> Iterator[None]:
    """For one loss computation of `trainer` on `inputs`, the log-probs TRL's loss reads are
    `sequence_token_logps` of its forward pass (only when the run's EngineGRPOConfig asks for it)."""
    if not getattr(trainer.args, "sequence_token_ratio", False):
        yield
        return
    forward = trainer._get_per_token_logps_and_entropies  # TRL's forward pass
    mask = inputs["completion_mask"]
    if "tool_mask" in inputs:  # tool results are out of the ratio, as TRL's loss leaves them out
        mask = mask * inputs["tool_mask"]

    def rewritten(*args: Any, **kwargs: Any) -> Any:
        logps, entropies, aux = forward(*args, **kwargs)
        return sequence_token_logps(logps, inputs.get("old_per_token_logps"), mask), entropies, aux

    name = "_get_per_token_logps_and_entropies"
    own = vars(trainer).get(name)  # None: the class's method (the real trainer)
    setattr(trainer, name, rewritten)
    try:
        yield
    finally:
        if own is None:
            delattr(trainer, name)
        else:
            setattr(trainer, name, own)

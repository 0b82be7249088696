"""Self-certainty (INTUITOR / RLIF, Zhao et al. 2025, §3; Kang et al. 2025): how far each next-token distribution
of a response is from uniform, averaged over the response.

    SC(o | q) = 1/|o| * sum_t KL(U || p(. | q, o_<t))
    KL(U || p_t) = -log V - 1/V * sum_j log p_tj = logsumexp(z_t) - mean_j(z_tj) - log V

where z_t are the logits over the full vocabulary (V = the logits' width, padded rows
included, as both official implementations do). The code of both implementations
returns `logsumexp - mean` without the `- log V`; the constant vanishes under group
normalisation, so either gives the same advantages. Higher = more confident; INTUITOR
maximises it.

Both functions here work in chunks of positions, so no [batch, time, vocab] softmax
(or float32 copy of the logits) is ever held at once: only `chunk_tokens x V` floats.
"""

from __future__ import annotations

import math
from typing import Any

import torch


def self_certainty(
    logits: torch.Tensor, mask: torch.Tensor, *, chunk_tokens: int = 1024, temperature: float = 1.0
) -> torch.Tensor:
    """Per-sequence self-certainty: KL(U || softmax(logits / temperature)) averaged over masked positions.

    `logits`: [batch, time, vocab] (any float dtype; computed in float32, or float64 for
    float64 input). `mask`: [batch, time], 1 where the position belongs to the response.
    Returns a [batch] tensor; a sequence with no masked position gets 0, as the paper's
    code does. Identity: the value is `(logsumexp(z) - z.mean(-1)).mean_t - log V`.
    """
    if logits.dim() != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(
            f"self_certainty needs logits [B, T, V] and mask [B, T]; got {tuple(logits.shape)} and {tuple(mask.shape)}"
        )
    batch, time, vocab = logits.shape
    dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    flat = logits.reshape(batch * time, vocab)
    positions = mask.reshape(-1).nonzero(as_tuple=True)[0]
    totals = torch.zeros(batch * time, dtype=dtype, device=logits.device)
    for start in range(0, positions.numel(), chunk_tokens):
        index = positions[start : start + chunk_tokens]
        totals[index] = token_self_certainty(flat[index].to(dtype).div_(temperature))
    return masked_sequence_mean(totals.view(batch, time), mask)


def token_self_certainty(logits: torch.Tensor) -> torch.Tensor:
    """KL(U || softmax(z)) for each row of `logits` [..., V] (no chunking)."""
    return torch.logsumexp(logits, dim=-1) - logits.mean(dim=-1) - math.log(logits.size(-1))


def masked_sequence_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` [B, T] over the positions where `mask` is set; 0 for empty rows."""
    mask = mask.to(values.dtype)
    return (values * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)


@torch.no_grad()
def policy_self_certainty(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    batch_size: int = 8,
    chunk_tokens: int = 1024,
    sharded: bool = False,
) -> torch.Tensor:
    """Self-certainty of each completion under `model`, as TRL scores log-probs.

    Same shift and temperature as TRL's per-token log-probs: the distribution that
    predicts completion token t comes from the hidden state at position t-1, and the
    logits are divided by `temperature`. Rows are run `batch_size` at a time. Returns a
    float32 [B] tensor on the model's device.

    Unsharded (`sharded=False`): the backbone runs once per row batch and the LM head is
    applied to `chunk_tokens` completion positions at a time, so the [B, T, V] logits
    never exist (benchmarks/bench_self_certainty.py). A PEFT model is scored with its
    adapters active. Sharded (`sharded=True`, FSDP / ZeRO-3): `model` is the wrapped
    module the trainer runs, and only its own forward gathers the sharded parameters, so
    the logits come from that forward (`logits_to_keep`: completion positions only); the
    price is one [batch_size, completion length, V] logits tensor per row batch.
    """
    if sharded:
        return _self_certainty_by_forward(
            model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature, batch_size, chunk_tokens
        )
    inner = _transformers_model(model)
    backbone, head = inner.base_model, inner.get_output_embeddings()
    text_config = inner.config.get_text_config() if hasattr(inner.config, "get_text_config") else inner.config
    softcap = getattr(text_config, "final_logit_softcapping", None)
    scale = getattr(text_config, "logit_scale", None)
    prompt_len = prompt_ids.size(1)
    scores = []
    for rows, input_ids, attention in _row_batches(
        prompt_ids, prompt_mask, completion_ids, completion_mask, batch_size
    ):
        hidden = backbone(input_ids=input_ids, attention_mask=attention, use_cache=False).last_hidden_state
        # position prompt_len-1+t predicts completion token t
        hidden = hidden[:, prompt_len - 1 : -1]
        mask = completion_mask[rows].bool()
        totals = torch.zeros(mask.shape, dtype=torch.float32, device=hidden.device)
        positions = mask.reshape(-1).nonzero(as_tuple=True)[0]
        flat_hidden = hidden.reshape(-1, hidden.size(-1))
        flat_totals = totals.view(-1)
        for c in range(0, positions.numel(), chunk_tokens):
            index = positions[c : c + chunk_tokens]
            z = head(flat_hidden[index]).float()  # in-place edits below: one [chunk, V] buffer
            if scale is not None:
                z.mul_(scale)
            if softcap is not None:
                z.div_(softcap).tanh_().mul_(softcap)
            flat_totals[index] = token_self_certainty(z.div_(temperature))
        scores.append(masked_sequence_mean(totals, mask))
    return torch.cat(scores)


def _row_batches(
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    batch_size: int,
):
    """(row slice, prompt+completion ids, attention mask) for `batch_size` rows at a time."""
    for start in range(0, prompt_ids.size(0), batch_size):
        rows = slice(start, start + batch_size)
        yield (
            rows,
            torch.cat([prompt_ids[rows], completion_ids[rows]], dim=1),
            torch.cat([prompt_mask[rows], completion_mask[rows]], dim=1),
        )


def _transformers_model(model: Any) -> Any:
    """The transformers model whose submodules carry the weights that score.

    A PeftModel's `base_model` is peft's LoraModel, not the transformer backbone; the
    model peft wraps (`get_base_model()`) has the LoRA layers injected in place, so its
    backbone and head compute with the adapters (or without, inside `disable_adapter()`).
    """
    get_base_model = getattr(model, "get_base_model", None)
    return get_base_model() if callable(get_base_model) else model


def _self_certainty_by_forward(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    temperature: float,
    batch_size: int,
    chunk_tokens: int,
) -> torch.Tensor:
    """Self-certainty from the model's own forward (its logit scaling and softcapping included)."""
    keep = completion_ids.size(1)
    scores = []
    for rows, input_ids, attention in _row_batches(
        prompt_ids, prompt_mask, completion_ids, completion_mask, batch_size
    ):
        # the last keep+1 positions; dropping the final one leaves those that predict the completion
        logits = model(input_ids=input_ids, attention_mask=attention, logits_to_keep=keep + 1, use_cache=False).logits[
            :, :-1
        ]
        scores.append(
            self_certainty(logits, completion_mask[rows], chunk_tokens=chunk_tokens, temperature=temperature).float()
        )
    return torch.cat(scores)

"""Batched generation with transformers, and held-out greedy accuracy.

Used by the toy model's warm-start (plateau detection) and by `train` for the
accuracy before and after RL. Prompts are left-padded so a batch decodes together.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch


@torch.no_grad()
def generate_completions(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    max_new_tokens: int,
    batch_size: int = 64,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    num_samples: int = 1,
    seed: int | None = None,
) -> list[list[str]]:
    """`num_samples` completions (decoded, special tokens removed) for every prompt."""
    if seed is not None:
        torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    out: list[list[str]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = list(prompts[start : start + batch_size])
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        kwargs: dict[str, Any] = dict(
            max_new_tokens=max_new_tokens,
            do_sample=do_sample,
            num_return_sequences=num_samples,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        if do_sample:
            kwargs.update(temperature=temperature, top_p=top_p)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        ids = model.generate(**enc, **kwargs)
        texts = tokenizer.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        out.extend(texts[i : i + num_samples] for i in range(0, len(texts), num_samples))
    model.train(was_training)
    return out


def greedy_accuracy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    answers: Sequence[Any],
    verify: Callable[[str, Any], bool],
    *,
    max_new_tokens: int,
    batch_size: int = 128,
) -> float:
    """Fraction of prompts whose greedy completion `verify` accepts."""
    if not prompts:
        return float("nan")
    completions = generate_completions(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size)
    return sum(verify(c[0], a) for c, a in zip(completions, answers)) / len(prompts)

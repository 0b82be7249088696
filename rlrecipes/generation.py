"""Generation with transformers: the one path behind `rlrecipes eval`'s `hf` backend, the
held-out accuracy measured during training, and the toy model's warm-start.

One path, so `accuracy_after` and an eval of the saved model agree on the same problems:
prompts are left-padded so a batch decodes together; generation stops on the tokenizer's
EOS and on every EOS id of the model's generation config (chat models list several, as
vLLM honours); a completion is cut at its first stop token or stop string; and a complete
`GenerationConfig` is passed, so a model's own sampling defaults never leak in.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch
from transformers import GenerationConfig


@dataclass(frozen=True)
class Sampling:
    n: int = 1
    temperature: float = 0.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    max_new_tokens: int = 3072
    stop: tuple[str, ...] = field(default_factory=tuple)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0


@dataclass(frozen=True)
class Completion:
    text: str
    num_tokens: int
    finish_reason: str  # "stop" (EOS or a stop string) | "length" (hit max_new_tokens)
    # the tool loop's counts for this completion (tool_loop.rollout.rollout_stats of its
    # trajectory), so an eval sums them per benchmark as training sums them per step; None: no tools
    tool_stats: dict[str, int] | None = None


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to the first stop string, and whether one was found."""
    hits = [i for i in (text.find(s) for s in stop if s) if i >= 0]
    return (text[: min(hits)], True) if hits else (text, False)


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """The tokenizer's EOS plus the model's generation-config EOS ids (chat models list
    several, e.g. <|im_end|> and <|endoftext|>; vLLM stops on all of them too)."""
    ids = model.generation_config.eos_token_id
    ids = [] if ids is None else ([ids] if isinstance(ids, int) else list(ids))
    return sorted({*ids, tokenizer.eos_token_id} - {None})


@torch.no_grad()
def hf_generate(
    model: Any, tokenizer: Any, prompts: Sequence[str], sampling: Sampling, seed: int | None = None
) -> list[list[Completion]]:
    """``sampling.n`` completions per prompt in one `generate` call; `seed` reseeds torch
    first (None: continue the current random stream). The model's train/eval mode is restored."""
    tok = tokenizer
    tok.padding_side = "left"
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    eos = eos_ids(model, tok)
    config = GenerationConfig(
        max_new_tokens=sampling.max_new_tokens,
        num_return_sequences=sampling.n,
        do_sample=not sampling.greedy,
        pad_token_id=tok.pad_token_id,
        eos_token_id=eos,
        repetition_penalty=1.0,
        stop_strings=list(sampling.stop) or None,
        **(
            {}
            if sampling.greedy
            else dict(temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k)
        ),
    )
    if sampling.greedy:
        config.temperature = config.top_p = config.top_k = None
    if seed is not None:
        torch.manual_seed(seed)
    enc = tok(list(prompts), return_tensors="pt", padding=True, add_special_tokens=False).to(device)
    out = model.generate(**enc, generation_config=config, tokenizer=tok if sampling.stop else None)
    model.train(was_training)
    new = out[:, enc["input_ids"].shape[1] :]
    stop_ids = {*eos, tok.pad_token_id} - {None}
    completions = []
    for row in new.tolist():
        end = next((i for i, t in enumerate(row) if t in stop_ids), None)
        ids = row if end is None else row[:end]
        text, hit = cut_at_stop(tok.decode(ids, skip_special_tokens=True), sampling.stop)
        truncated = end is None and not hit and len(ids) >= sampling.max_new_tokens
        completions.append(Completion(text, len(ids), "length" if truncated else "stop"))
    n = sampling.n
    return [completions[i : i + n] for i in range(0, len(completions), n)]


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
    """`num_samples` completion texts for every prompt, `batch_size` prompts per call
    (`seed`, when given, seeds the first call; later ones continue its stream)."""
    sampling = Sampling(
        n=num_samples, temperature=temperature if do_sample else 0.0, top_p=top_p, max_new_tokens=max_new_tokens
    )
    out: list[list[str]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = hf_generate(model, tokenizer, prompts[start : start + batch_size], sampling, seed)
        seed = None
        out.extend([c.text for c in group] for group in chunk)
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


@functools.cache
def on_vllm_cpu() -> bool:
    """Whether vLLM is installed here and is the CPU build."""
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        return False
    from vllm.platforms import current_platform

    return current_platform.is_cpu()

"""Generation: the one sampling loop (`sample_chunks`) and the one transformers path
(`hf_generate`, behind `HFBackend`), for `rlrecipes eval`'s backends, the judge commands,
`spurious-labels`, the judge reward, the held-out accuracy measured during training and the
toy model's warm-start. They sit here, below every package that generates, so that each
takes the same loop instead of writing its own.

One path, so `accuracy_after` and an eval of the saved model agree on the same problems:
prompts are left-padded so a batch decodes together; generation stops on the tokenizer's
EOS and on every EOS id of the model's generation config (chat models list several, as
vLLM honours); a completion is cut at its first stop token or stop string; and a complete
`GenerationConfig` is passed, so a model's own sampling defaults never leak in.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any, Callable, Iterator, Protocol, Sequence

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


Progress = Callable[[int], None]  # called with how many of this call's prompts are finished


class SampleSource(Protocol):
    """What `sample_chunks` draws from: an eval backend (hf, vLLM), or `HFBackend` on a model
    already in memory (held-out accuracy, the judge reward)."""

    def generate(
        self,
        prompts: Sequence[str],
        sampling: Sampling,
        seeds: Sequence[int | None],
        on_progress: Progress | None = None,
    ) -> list[list[Completion]]:
        """``sampling.n`` completions per prompt; ``seeds[i]`` seeds prompt i (or its chunk);
        ``on_progress(k)``, where the backend can tell, as k of them are done."""
        ...

    def chunk_size(self, sampling: Sampling) -> int:
        """How many prompts one `generate` call takes (an eval saves ``samples.jsonl`` after each)."""
        ...


@dataclass(frozen=True)
class Chunk:
    """One ``generate`` call of `sample_chunks`: which prompts, their completions, its seconds."""

    indices: list[int]  # positions in the prompts given to `sample_chunks`
    completions: list[list[Completion]]
    seconds: float


def sample_chunks(
    backend: SampleSource,
    prompts: Sequence[str],
    seeds: Sequence[int | None],
    sampling: Sampling,
    positions: Sequence[int] | None = None,
    on_progress: Progress | None = None,
) -> Iterator[Chunk]:
    """The one sampling loop (eval, judge-eval, judge-pairs, spurious-labels, the judge reward,
    held-out accuracy): ``sampling.n`` completions per prompt, ``seeds[i]`` seeding prompt i,
    in the backend's chunks; the caller saves or reports each chunk as it comes, and may stop
    drawing (a chunk is generated only when the caller asks for it).

    Chunks are fixed by each prompt's position in its whole set (``positions``, default
    0, 1, ...: a resumed eval passes the positions of the problems left), so ``hf``, which
    seeds a chunk, regenerates exactly what an uninterrupted run would."""
    size = backend.chunk_size(sampling)
    where = range(len(prompts)) if positions is None else positions
    for _, group in groupby(range(len(prompts)), key=lambda i: where[i] // size):
        indices = list(group)
        chunk_prompts, chunk_seeds = [prompts[i] for i in indices], [seeds[i] for i in indices]
        started = time.time()
        if on_progress is None:
            completions = backend.generate(chunk_prompts, sampling, chunk_seeds)
        else:
            completions = backend.generate(chunk_prompts, sampling, chunk_seeds, on_progress=on_progress)
        yield Chunk(indices, completions, time.time() - started)


class HFBackend:
    """Batched ``model.generate`` with left padding, on CPU or GPU: `batch_size` sequences
    (prompts times ``sampling.n``) per call."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, batch_size: int = 64) -> None:
        self.model, self.tokenizer, self.batch_size = model, tokenizer, max(1, batch_size)

    def chunk_size(self, sampling: Sampling) -> int:
        return max(1, self.batch_size // sampling.n)

    def generate(
        self,
        prompts: Sequence[str],
        sampling: Sampling,
        seeds: Sequence[int | None],
        on_progress: Progress | None = None,
    ) -> list[list[Completion]]:
        # one batch: nothing finishes before the call returns (the caller counts the chunk)
        # one seed per chunk: chunks are fixed by problem position, so a resumed eval
        # regenerates exactly what an uninterrupted one would; None: torch's stream goes on
        return hf_generate(self.model, self.tokenizer, prompts, sampling, seed=seeds[0] if seeds else 0)


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
    backend = HFBackend(model, tokenizer, batch_size=max(1, batch_size) * num_samples)  # batch_size prompts a call
    seeds = [seed] + [None] * (len(prompts) - 1)
    return [
        [c.text for c in group]
        for chunk in sample_chunks(backend, prompts, seeds, sampling)
        for group in chunk.completions
    ]


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

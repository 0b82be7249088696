"""Self-certainty: the chunked computation vs a naive full-softmax one, per token.

INTUITOR's reward needs the full-vocabulary distribution at every completion token. The
naive way (what the paper's TRL fork did) takes the model's [batch, time, vocab] logits
and their log-softmax at once; `rlrecipes.rewards.certainty.policy_self_certainty`
runs the backbone, then the LM head on `chunk` positions at a time, so only
[chunk, vocab] floats exist. Same model, same tokens, Qwen2.5's 151,936-row vocabulary.
A third variant, `forward`, is the path sharded models (FSDP, ZeRO-3) take: the model's
own forward with `logits_to_keep`, i.e. the completion positions' logits of a row batch
at once (the price of letting the wrapper gather its parameters).

Each variant runs in its own process; memory = peak resident set during the computation
minus the resident set just before it (ru_maxrss, so a variant that never rises above
the process's earlier peak would read as 0; the check `above_setup_peak` says whether
it did). Records (benchkit.save_result) the ratios naive / chunked and forward / chunked and
the largest difference between the results (they must agree).
"""

from __future__ import annotations

import json
import math
import resource
import subprocess
import sys
import time

from benchkit import parse_bench_args, save_result

MODES = {
    "full": {"vocab": 151_936, "batch": 4, "prompt": 32, "completion": 480, "chunk": 256, "repeats": 3},
    "smoke": {"vocab": 4096, "completion": 64, "chunk": 32, "repeats": 1},
}
# the shape of the variant measured in this process (a child sets it from its command line)
VOCAB, BATCH, PROMPT, COMPLETION, CHUNK, REPEATS = (MODES["full"][k] for k in MODES["full"])


def _model():
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config).eval()


def _inputs():
    import torch

    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), generator=g)
    completion = torch.randint(0, VOCAB, (BATCH, COMPLETION), generator=g)
    prompt_mask = torch.ones_like(prompt)
    completion_mask = torch.ones_like(completion)
    completion_mask[0, COMPLETION // 2 :] = 0  # one shorter completion
    return prompt, prompt_mask, completion, completion_mask


def naive(model, prompt, prompt_mask, completion, completion_mask):
    """The whole [B, T, V] logits and log-softmax: KL(U||p) = -mean_v log p - log V."""
    import torch

    ids = torch.cat([prompt, completion], 1)
    mask = torch.cat([prompt_mask, completion_mask], 1)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, PROMPT - 1 : -1].float()
        per_token = -torch.log_softmax(logits, dim=-1).mean(-1) - math.log(logits.size(-1))
    m = completion_mask.float()
    return (per_token * m).sum(-1) / m.sum(-1).clamp(min=1)


def chunked(model, prompt, prompt_mask, completion, completion_mask):
    from rlrecipes.rewards.certainty import policy_self_certainty

    return policy_self_certainty(
        model, prompt, prompt_mask, completion, completion_mask, batch_size=BATCH, chunk_tokens=CHUNK
    )


def forward(model, prompt, prompt_mask, completion, completion_mask):
    from rlrecipes.rewards.certainty import policy_self_certainty

    return policy_self_certainty(
        model, prompt, prompt_mask, completion, completion_mask, batch_size=BATCH, chunk_tokens=CHUNK, sharded=True
    )


VARIANTS = {"naive": naive, "chunked": chunked, "forward": forward}


def child(variant: str, shape: dict) -> None:
    """Measure one variant in this (fresh) process and print its numbers as JSON."""
    import gc

    import psutil
    import torch

    global VOCAB, BATCH, PROMPT, COMPLETION, CHUNK, REPEATS
    VOCAB, BATCH, PROMPT, COMPLETION, CHUNK, REPEATS = (shape[k] for k in MODES["full"])
    torch.set_num_threads(1)
    model, inputs = _model(), _inputs()
    fn = VARIANTS[variant]
    prompt, prompt_mask, completion, completion_mask = inputs
    fn(model, prompt[:1], prompt_mask[:1], completion[:1, :8], completion_mask[:1, :8])  # warm-up (lazy inits)
    gc.collect()
    before = psutil.Process().memory_info().rss
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        out = fn(model, *inputs)
        times.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tokens = int(inputs[3].sum())
    print(
        json.dumps(
            {
                "peak_extra_bytes": max(peak - before, 0),
                "above_setup_peak": peak > peak_before,
                "seconds": min(times),
                "tokens": tokens,
                "values": out.tolist(),
            }
        )
    )


def run(variant: str, shape: dict) -> dict:
    command = [sys.executable, __file__, "--child", variant, json.dumps(shape)]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{variant} failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_bench_args(__file__, MODES)
    naive_r, chunked_r, forward_r = (run(v, args.settings) for v in ("naive", "chunked", "forward"))
    tokens = naive_r["tokens"]
    mb = 2**20
    diff = max(abs(a - b) for a, b in zip(naive_r["values"], chunked_r["values"]))
    forward_diff = max(abs(a - b) for a, b in zip(forward_r["values"], chunked_r["values"]))
    save_result(
        args,
        {
            "vocab": args.vocab,
            "completion_tokens": tokens,
            "chunk_tokens": args.chunk,
            "naive_peak_mb": round(naive_r["peak_extra_bytes"] / mb, 1),
            "chunked_peak_mb": round(chunked_r["peak_extra_bytes"] / mb, 1),
            "naive_kb_per_token": round(naive_r["peak_extra_bytes"] / tokens / 1024, 1),
            "chunked_kb_per_token": round(chunked_r["peak_extra_bytes"] / tokens / 1024, 1),
            "memory_ratio_naive_over_chunked": round(
                naive_r["peak_extra_bytes"] / max(chunked_r["peak_extra_bytes"], 1), 2
            ),
            "naive_us_per_token": round(1e6 * naive_r["seconds"] / tokens, 1),
            "chunked_us_per_token": round(1e6 * chunked_r["seconds"] / tokens, 1),
            "time_ratio_naive_over_chunked": round(naive_r["seconds"] / chunked_r["seconds"], 2),
            "forward_peak_mb": round(forward_r["peak_extra_bytes"] / mb, 1),
            "memory_ratio_forward_over_chunked": round(
                forward_r["peak_extra_bytes"] / max(chunked_r["peak_extra_bytes"], 1), 2
            ),
            "forward_us_per_token": round(1e6 * forward_r["seconds"] / tokens, 1),
            "peaks_measured": naive_r["above_setup_peak"]
            and chunked_r["above_setup_peak"]
            and forward_r["above_setup_peak"],
            "max_abs_diff": diff,
            "forward_max_abs_diff": forward_diff,
        },
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main()

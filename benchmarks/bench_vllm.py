"""vLLM against transformers' `generate` on CPU: SmolLM2-135M-Instruct on the first 50
MATH-500 problems, `rlrecipes eval` once with each backend, in the same run.

Records (benchkit.save_result; progress goes to stderr):

- ``tokens_per_s_hf`` / ``tokens_per_s_vllm``: generated tokens per second of generation
  time (the same model, prompts and greedy settings; engine start-up excluded) and their
  ratio ``ratio_vllm_vs_hf``;
- ``hf`` / ``vllm``: each eval's ``pass@1``, ``wall_s`` (the whole command: imports,
  model load or engine start-up, generation, grading), ``generation_s``, and
  ``completion_tokens``;
- ``same_greedy_completions``: the fraction of problems whose completions are identical
  (both sides run the model's float32 weights, so 1.0 unless a near-tie flips a token).

Both sides compute on the same number of threads (vLLM-CPU keeps one core of the machine
for its front-end process: on 2 cores, one thread each).

Without vLLM installed it says so and writes nothing (a stored result stays as it was).
Generation is capped at ``--max-new-tokens`` (256) so the transformers side ends in
minutes; the benchmark's own 3072 would take hours on 2 cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import parse_bench_args, save_result, skip

MODES = {
    "full": {"limit": 50, "max_new_tokens": 256},
    "smoke": {"limit": 1, "max_new_tokens": 8},
}


def _eval(backend: str, run: Path, args) -> dict:
    command = [
        sys.executable,
        "-m",
        "rlrecipes.cli",
        "eval",
        "model=smollm2-135m",
        "benchmark=math500",
        f"data_dir={args.data_dir}",
        f"limit={args.limit}",
        f"protocol.max_new_tokens={args.max_new_tokens}",
        f"generation.backend={backend}",
        "progress=false",
        f"run_dir={run}",
    ]
    # vLLM-CPU keeps one core for its front-end process and computes on the others; hf
    # gets as many threads
    threads = str(max(1, (os.cpu_count() or 2) - 1))
    started = time.time()
    out = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": threads}
    )
    wall = time.time() - started
    if out.returncode != 0:
        raise SystemExit(f"{backend} eval failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    summary = json.loads((run / "summary.json").read_text())
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    tokens = sum(sum(s["num_tokens"]) for s in samples)
    print(f"{backend}: {wall:.0f} s, {tokens} tokens in {summary['generation_seconds']:.1f} s", file=sys.stderr)
    return {
        "pass@1": summary["benchmarks"]["math500"]["pass@1"],
        "wall_s": round(wall, 1),
        "generation_s": summary["generation_seconds"],
        "completion_tokens": tokens,
        "completions": [s["completions"] for s in samples],
    }


def main() -> None:
    args = parse_bench_args(__file__, MODES, data_dir=True)
    if importlib.util.find_spec("vllm") is None:
        skip(args, "vLLM is not installed")
        return
    with tempfile.TemporaryDirectory() as tmp:
        runs = {b: _eval(b, Path(tmp) / b, args) for b in ("hf", "vllm")}
    hf, vllm = runs["hf"], runs["vllm"]
    same = sum(a == b for a, b in zip(hf.pop("completions"), vllm.pop("completions"))) / args.limit
    speed = {b: r["completion_tokens"] / r["generation_s"] for b, r in runs.items()}
    save_result(
        args,
        {
            "model": "smollm2-135m (float32)",
            "problems": f"math500[:{args.limit}]",
            "tokens_per_s_hf": round(speed["hf"], 1),
            "tokens_per_s_vllm": round(speed["vllm"], 1),
            "ratio_vllm_vs_hf": round(speed["vllm"] / speed["hf"], 2),
            "hf": hf,
            "vllm": vllm,
            "same_greedy_completions": round(same, 3),
        },
    )


if __name__ == "__main__":
    main()

"""bench_cpu_paths: does the quick start give the same figures on another CPU? The quick start as a
user runs it (`rlrecipes train seed=S`, from the shipped toy model) on each of torch's CPU kernel
paths this machine has — its own (e.g. AVX2), AVX2's too where its own is AVX-512, and the plain one
every x86 CPU runs (ATEN_CPU_CAPABILITY=default) — over the same seeds.

A toy built on the machine used to differ by CPU type (AVX-512 against AVX2 weights 0.2 apart after
its warm-start), so the README's figures held on one machine only; the toy now ships, and what is
left to differ between machines is the RL run's own arithmetic. Records, per kernel path: the
capability torch reports, held-out accuracy after RL per seed and the gain in points; per seed,
the largest difference between the paths (`max_abs_difference`), and the stored quick-start
result's accuracies for the same seeds when it has them (measured on another day and commit).

Usage: python benchmarks/bench_cpu_paths.py [--seeds ...] [--steps N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import RESULTS_DIR, parse_bench_args, save_result, stats

MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 120},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 2},
}


def kernel_paths() -> dict[str, str | None]:
    """name -> ATEN_CPU_CAPABILITY (None: torch's choice): this machine's own path, AVX2's where the
    machine's own is AVX-512 (so one AVX-512 machine measures the two x86 vector paths users have),
    and the plain one every x86 CPU runs."""
    paths: dict[str, str | None] = {"native": None}
    if capability(None).upper().startswith("AVX512"):
        paths["avx2"] = "avx2"
    paths["default"] = "default"
    return paths


def capability(value: str | None) -> str:
    env = _env(value)
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout.strip()


def _env(value: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    return env if value is None else {**env, "ATEN_CPU_CAPABILITY": value}


def quick_start(seed: int, steps: int, value: str | None, overrides: list[str]) -> dict:
    """`rlrecipes train seed=SEED` on the kernel path `value`: its summary."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        command = [sys.executable, "-m", "rlrecipes.cli", "train", f"seed={seed}", f"trainer.max_steps={steps}"]
        command += ["trainer.progress=false", *overrides, f"run_dir={run}"]
        done = subprocess.run(command, capture_output=True, text=True, env=_env(value))
        if done.returncode != 0:
            raise SystemExit(f"seed {seed} on {value or 'native'}: exit {done.returncode}\n{done.stdout[-2000:]}")
        return json.loads((run / "summary.json").read_text())


def stored_accuracies(seeds: list[int], steps: int) -> dict[int, float] | None:
    """The stored quick-start result's GRPO accuracies for these seeds (same step count), if any."""
    path = RESULTS_DIR / "quickstart.json"
    if not path.exists():
        return None
    record = json.loads(path.read_text())
    if record["result"]["steps"] != steps:
        return None
    by_seed = dict(zip(record["seeds"], record["result"]["grpo"]["accuracy_after"]))
    return {s: by_seed[s] for s in seeds if s in by_seed} or None


def largest_difference(paths: dict[str, dict]) -> float:
    """The largest spread, over seeds, of one seed's accuracy across every path."""
    per_seed = zip(*(p["accuracy_after"] for p in paths.values()))
    return round(max(max(seed) - min(seed) for seed in per_seed), 4)


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    paths = {}
    for name, value in kernel_paths().items():
        runs = [quick_start(seed, args.steps, value, args.overrides) for seed in args.seeds]
        after = [r["accuracy_after"] for r in runs]
        paths[name] = {
            "capability": capability(value),
            "accuracy_after": [round(a, 4) for a in after],
            "gain_points": stats([100 * (r["accuracy_after"] - r["accuracy_before"]) for r in runs], 2),
        }
        print(f"{name} ({paths[name]['capability']}): after {paths[name]['accuracy_after']}", file=sys.stderr)
    result = {
        "steps": args.steps,
        "paths": paths,
        "max_abs_difference": largest_difference(paths),
        "stored_quickstart": stored_accuracies(args.seeds, args.steps) if args.mode != "smoke" else None,
    }
    save_result(args, result)


if __name__ == "__main__":
    main()

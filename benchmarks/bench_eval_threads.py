"""Eval wall time per problem at the default thread setting vs 1 and 2 CPU threads.

Records (benchkit.save_result; progress goes to stderr) ``seconds_per_problem`` for
``threads=null`` (rlrecipes' default: half the CPUs this process may use), ``threads=1``
and ``threads=2``, each a fresh ``rlrecipes eval`` process generating the same MATH-500
problems greedily with the same model (SmolLM2-135M-Instruct when its converted folder
is in the rlrecipes cache, else the locally built toy model; key=value overrides replace
that choice), plus the ratios to the default and whether every setting produced the same
completions. ``load_average`` records how busy the machine was: the issue's 7x came from
a loaded 2-core machine, where torch's own default (one thread per core) spins against
the other jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import parse_bench_args, save_result

SETTINGS = ("null", "1", "2")
MODES = {
    "full": {"problems": 4, "tokens": 96},  # tokens: new tokens per completion
    "smoke": {"problems": 1, "tokens": 4},
}


def _model_overrides() -> list[str]:
    from rlrecipes.models import cache_root

    smol = cache_root() / "smollm2-135m-instruct"
    if (smol / "model.safetensors").is_file():
        return [f"model.name_or_path={smol}", "protocol.template=chat"]
    return []  # the toy model, built (once) in the cache


def child(spec: dict) -> None:
    """One eval in this process; prints its timing and a fingerprint of the completions."""
    import hashlib

    from rlrecipes.compose import compose_config
    from rlrecipes.eval.runner import run_eval

    overrides = [
        *spec["model"],
        "benchmark=math500",
        f"data_dir={spec['data_dir']}",
        f"limit={spec['problems']}",
        f"protocol.max_new_tokens={spec['tokens']}",
        "generation.backend=hf",
        "grading.workers=0",
        "progress=false",
        f"threads={spec['threads']}",
    ]
    cfg = compose_config("eval", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = run_eval(cfg, Path(tmp), log=lambda _: None)
        wall = time.perf_counter() - start
        completions = (Path(tmp) / "samples.jsonl").read_text()
    texts = [json.loads(line)["completions"] for line in completions.splitlines()]
    print(
        json.dumps(
            {
                "wall": wall,
                "generation": summary["generation_seconds"],
                "fingerprint": hashlib.sha256(json.dumps(texts).encode()).hexdigest()[:12],
                "model": summary["model"],
            }
        )
    )


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True, data_dir=True)
    model = args.overrides or _model_overrides()
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    runs = {}
    for threads in SETTINGS:
        print(f"[bench] threads={threads}", file=sys.stderr)
        spec = {"threads": threads, "model": model, "data_dir": str(args.data_dir)}
        spec.update(problems=args.problems, tokens=args.tokens)
        out = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            env=env,
            timeout=3600,
        )
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not lines:
            raise SystemExit((out.stderr or out.stdout).strip().splitlines()[-1])
        runs[threads] = json.loads(lines[-1])
    per = {t: r["generation"] / args.problems for t, r in runs.items()}
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    save_result(
        args,
        {
            "model": runs["null"]["model"],
            "cpus": cpus,
            "default_threads": max(1, cpus // 2),
            "seconds_per_problem": {f"threads={t}": round(v, 2) for t, v in per.items()},
            "ratio_1_vs_default": round(per["1"] / per["null"], 2),
            "ratio_2_vs_default": round(per["2"] / per["null"], 2),
            "same_completions": len({r["fingerprint"] for r in runs.values()}) == 1,
            "load_average": [round(x, 2) for x in os.getloadavg()],
        },
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(json.loads(sys.argv[2]))
    else:
        main()

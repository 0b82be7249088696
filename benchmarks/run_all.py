"""`make bench` / `make bench-quick`: run the benchmarks/bench_*.py scripts one after another.

  python benchmarks/run_all.py                 every bench, full settings: each replaces its
                                               stored result, benchmarks/results/<bench>.json
  python benchmarks/run_all.py --quick         the QUICK subset with fewer seeds or repeats
                                               (a change to the engine), into outputs/bench-quick/<time>/
  python benchmarks/run_all.py --smoke         every bench for a few steps, one seed, on the
                                               tiny toy, into outputs/bench-smoke/<time>/
  python benchmarks/run_all.py bench_grading   the named benches only (any mode)

Each bench compares against a baseline or control measured side by side in the same run and
writes its own result file (benchkit.save_result), only when it finishes: one that fails or
is interrupted leaves its previous result as it was. Each bench runs in a child process and
reports how it ended through a status file (benchkit.report_status: ok with its result file, or
skipped and why). Progress goes to stderr; stdout gets one summary line per bench (ok, failed
or skipped). Exits 1 when any bench failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from benchkit import REPO, STATUS_FILE_ENV, bench_name

HERE = Path(__file__).resolve().parent
# What a change to the engine should rerun with --quick (521 s on the 2-core development
# machine under load 5, with the default toy already built): the step-time overhead against
# plain TRL, grading speed and bounds, self-certainty's memory, DAPO's dynamic sampling
# against GRPO, and the quick-start against rejection sampling.
QUICK = (
    "bench_engine_overhead",
    "bench_grading",
    "bench_grading_bounds",
    "bench_self_certainty",
    "bench_dapo",
    "bench_quickstart",
)


# Benches with a make target of their own, left out of `make bench`: the method atlas regenerates
# over about 8.5 hours, resumable arm by arm across sittings (`make bench-atlas`).
OWN_TARGET = ("bench_atlas",)


def all_benches() -> list[str]:
    return sorted(p.stem for p in HERE.glob("bench_*.py") if p.stem not in OWN_TARGET)


def run_one(script: str, mode: str, results_dir: Path | None) -> dict:
    """Run one bench in a child process; how it ended comes back through a status file the
    bench writes (benchkit.report_status), never from its printed lines."""
    command = [sys.executable, str(HERE / f"{script}.py")]
    if mode != "full":
        command += [f"--{mode}", "--results-dir", str(results_dir)]
    record = {"bench": bench_name(script)}
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        status_file = Path(tmp) / "status.json"
        env = {**os.environ, STATUS_FILE_ENV: str(status_file)}
        done = subprocess.run(command, stdout=subprocess.DEVNULL, env=env)  # stderr: its progress, as it runs
        status = json.loads(status_file.read_text()) if status_file.is_file() else None
    record["seconds"] = round(time.time() - started, 1)
    if done.returncode != 0 or status is None:
        return {**record, "status": "failed", "exit_code": done.returncode}
    if status["status"] == "ok" and Path(status["result"]).resolve().is_relative_to(REPO):
        status = {**status, "result": str(Path(status["result"]).resolve().relative_to(REPO))}
    return {**record, **status}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true", help=f"the quick subset: {', '.join(QUICK)}")
    which.add_argument("--smoke", action="store_true", help="every bench, a few steps, one seed")
    parser.add_argument("benches", nargs="*", help="bench_* names (default: all; with --quick: the quick subset)")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "smoke" if args.smoke else "full"
    names = args.benches or (list(QUICK) if mode == "quick" else all_benches())
    unknown = [n for n in names if n not in all_benches()]
    if unknown:
        parser.error(f"{unknown[0]} is not a bench; valid: {', '.join(all_benches())}")
    results_dir = None
    if mode != "full":
        results_dir = REPO / "outputs" / f"bench-{mode}" / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    failed = 0
    for script in names:
        summary = run_one(script, mode, results_dir)
        failed += summary["status"] == "failed"
        print(json.dumps(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

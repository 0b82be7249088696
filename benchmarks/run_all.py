"""`make bench`: run every benchmarks/bench_*.py, echo its JSON line, keep them all.

Each script prints one JSON line comparing against a baseline measured in the same
run. The lines are also appended to outputs/bench/<timestamp>.jsonl.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = set(sys.argv[1:])
    out_dir = Path("outputs") / "bench"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_file = out_dir / f"{datetime.now():%Y-%m-%d_%H-%M-%S}.jsonl"
    failed = 0
    for script in sorted(HERE.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
        start = time.time()
        proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            failed += 1
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            record = {"bench": script.stem, "error": tail[0]}
        else:
            record = json.loads(lines[-1])
        record["bench_seconds"] = round(time.time() - start, 1)
        print(json.dumps(record), flush=True)
        with out_file.open("a") as f:
            f.write(json.dumps(record) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A stand-in for a stage's `rlrecipes sft|train` process (`launcher=[python, this file]`), so
the stages command's process handling is tested without a model.

It does what the real commands do to their run directory (`run_dir=` from its arguments): an
`sft` stage finishes at once (config.yaml, summary.json); a `train` stage locks its run
directory as `rlrecipes train` does, appends its command line to `starts.log`, writes
`config.yaml`, and then:
- with `resume=true`, or unless STAGE_CHILD_WAIT=1: finishes (summary.json), exit status 0;
- else: writes its pid to `child.pid` (the tests wait for that file) and waits for a signal;
  SIGTERM is appended to `signals.log` and, as a train stage saving its checkpoint would,
  the process lingers until the file `release` exists when STAGE_CHILD_LINGER=1, then exits
  with 128 + 15.
"""

import json
import os
import signal
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    command, overrides = argv[0], argv[1:]
    run = Path(next(o.split("=", 1)[1] for o in overrides if o.startswith("run_dir=")))
    run.mkdir(parents=True, exist_ok=True)
    if command == "sft":
        (run / "config.yaml").write_text("stage: sft\n")
        (run / "summary.json").write_text(json.dumps({"steps": 1}))
        return 0
    from rlrecipes.rundir import lock_run_dir

    lock_run_dir(run)  # what create_run_dir / reopen_run_dir do first
    with open(run / "starts.log", "a") as f:
        f.write(" ".join(argv) + "\n")
    (run / "config.yaml").write_text("stage: train\n")
    if "resume=true" in overrides or os.environ.get("STAGE_CHILD_WAIT") != "1":
        (run / "summary.json").write_text(json.dumps({"steps": 2}))
        return 0
    received: list[int] = []

    def stop(signum, frame):
        received.append(signum)
        with open(run / "signals.log", "a") as f:
            f.write(signal.Signals(signum).name + "\n")

    signal.signal(signal.SIGTERM, stop)
    (run / "child.pid.tmp").write_text(f"{os.getpid()}\n")  # a whole line: what the tests wait for
    (run / "child.pid.tmp").rename(run / "child.pid")
    while not received:
        time.sleep(0.05)
    while os.environ.get("STAGE_CHILD_LINGER") == "1" and not (run / "release").exists():
        time.sleep(0.05)
    return 128 + signal.SIGTERM


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Engine overhead: median step time of `rlrecipes train` vs a plain TRL script.

Both train the quick-start's model on the same prompts with the same settings; runs
alternate (plain, rlrecipes, plain, rlrecipes) so machine drift hits both. The first
3 steps of each run (warm-up) are left out. Prints one JSON line; target ratio <= 1.05.
`ratio_per_completion_token` divides each step's time by its mean completion length first,
so that the two runs' policies drifting to longer or shorter answers does not count.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STEPS = 40
RUNS = 3  # alternating pairs; two were not enough to keep machine drift out of the ratio
HERE = Path(__file__).resolve().parent


def per_token(step_times: list[float], mean_lengths: list[float]) -> list[float]:
    """Seconds per generated token of each step after warm-up: the runs' policies drift
    apart, and a step's cost follows how long its completions are."""
    return [t / n for t, n in list(zip(step_times, mean_lengths))[3:] if n]


def main() -> None:
    import torch

    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose_config("train", [f"trainer.max_steps={STEPS}"])
    problems = load_problem_set(cfg.data)
    model_dir = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None)
    ours, plain, ours_per_token, plain_per_token = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        problems_file = Path(tmp) / "problems.json"
        problems_file.write_text(json.dumps(problems.train))
        for rep in range(RUNS):
            out = subprocess.run(
                [
                    sys.executable,
                    str(HERE / "plain_trl_grpo.py"),
                    model_dir,
                    str(problems_file),
                    str(STEPS),
                    f"{tmp}/plain{rep}",
                    str(cfg.trainer.cpu_threads or torch.get_num_threads()),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            record = json.loads(out.stdout.strip().splitlines()[-1])
            plain += record["step_times"][3:]
            plain_per_token += per_token(record["step_times"], record["completion_lengths"])
            run_dir = Path(tmp) / f"ours{rep}"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rlrecipes.cli",
                    "train",
                    f"trainer.max_steps={STEPS}",
                    "trainer.eval_before=false",
                    "trainer.eval_after=false",
                    f"run_dir={run_dir}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=True,
                env={**os.environ, "COLUMNS": "120"},
            )
            rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
            ours += [r["step_time"] for r in rows][3:]
            ours_per_token += per_token([r["step_time"] for r in rows], [r["completion_length_mean"] for r in rows])
    median_ours, median_plain = statistics.median(ours), statistics.median(plain)
    print(
        json.dumps(
            {
                "bench": "engine_overhead",
                "steps_per_run": STEPS,
                "runs_each": RUNS,
                "median_step_seconds_rlrecipes": round(median_ours, 4),
                "median_step_seconds_plain_trl": round(median_plain, 4),
                "ratio": round(median_ours / median_plain, 3),
                "target_ratio_max": 1.05,
                "ratio_per_completion_token": round(
                    statistics.median(ours_per_token) / statistics.median(plain_per_token), 3
                ),
            }
        )
    )


if __name__ == "__main__":
    main()

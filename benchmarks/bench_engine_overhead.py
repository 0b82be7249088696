"""Engine overhead: median step time of `rlrecipes train` vs a plain TRL script.

Both train the quick-start's model on the same prompts with the same settings; runs
alternate (plain, rlrecipes, plain, rlrecipes) so machine drift hits both. The first
3 steps of each run (warm-up) are left out. Prints one JSON line; target ratio <= 1.05.
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
HERE = Path(__file__).resolve().parent


def main() -> None:
    import torch

    from rlrecipes.config import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose_config("train", [f"trainer.max_steps={STEPS}"])
    problems = load_problem_set(cfg.data)
    model_dir = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None)
    ours, plain = [], []
    with tempfile.TemporaryDirectory() as tmp:
        problems_file = Path(tmp) / "problems.json"
        problems_file.write_text(json.dumps(problems.train))
        for rep in range(2):
            out = subprocess.run([sys.executable, str(HERE / "plain_trl_grpo.py"), model_dir, str(problems_file),
                                  str(STEPS), f"{tmp}/plain{rep}",
                                  str(cfg.trainer.cpu_threads or torch.get_num_threads())], capture_output=True, text=True, check=True)
            plain += json.loads(out.stdout.strip().splitlines()[-1])["step_times"][3:]
            run_dir = Path(tmp) / f"ours{rep}"
            subprocess.run([sys.executable, "-m", "rlrecipes.cli", "train", f"trainer.max_steps={STEPS}",
                            "trainer.eval_before=false", "trainer.eval_after=false", f"run_dir={run_dir}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                           env={**os.environ, "COLUMNS": "120"})
            rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
            ours += [r["step_time"] for r in rows][3:]
    median_ours, median_plain = statistics.median(ours), statistics.median(plain)
    print(json.dumps({"bench": "engine_overhead", "steps_per_run": STEPS, "runs_each": 2,
                      "median_step_seconds_rlrecipes": round(median_ours, 4),
                      "median_step_seconds_plain_trl": round(median_plain, 4),
                      "ratio": round(median_ours / median_plain, 3), "target_ratio_max": 1.05}))


if __name__ == "__main__":
    main()

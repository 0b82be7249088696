"""`python -m rlrecipes.eval.final DIR`: evaluate with the config in DIR/config.yaml into DIR.

A training run's `final_eval` starts this in a process of its own (see `rlrecipes.training`),
so the evaluation's generation engine never shares the training process's GPU memory
or torch.distributed world. Writes `headline.json` ({benchmark: {metric, value}}) next
to the evaluation's own `summary.json`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import OmegaConf

from rlrecipes.eval.runner import run_eval
from rlrecipes.eval.scoring import headline
from rlrecipes.rundir import MARKER, write_json


def main(out_dir: str) -> None:
    folder = Path(out_dir)
    cfg = OmegaConf.load(folder / MARKER)
    done = run_eval(cfg, folder)
    write_json(
        folder / "headline.json",
        {name: dict(zip(("metric", "value"), headline(m))) for name, m in done["benchmarks"].items()},
    )


if __name__ == "__main__":
    main(sys.argv[1])

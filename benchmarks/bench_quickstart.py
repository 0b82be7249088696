"""Quick-start RL gain over 3 seeds, and the SFT-only control.

Prints one JSON line:
  rl:  held-out greedy accuracy before/after the default `rlrecipes train` for seeds
       0, 1, 2 (mean and spread of the gain, in points), with wall time;
  sft_control: the same warm-started model trained further by SFT on the same
       teacher for the same wall-clock time as the median RL run; its gain is what
       "more SFT" would have given. The RL advantage is rl_gain - sft_gain.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rlrecipes.config import compose_config


def rl_runs(seeds: list[int], extra: list[str]) -> list[dict]:
    from rlrecipes.train import train

    out = []
    for seed in seeds:
        cfg = compose_config("train", [f"seed={seed}", "trainer.progress=false", *extra])
        with tempfile.TemporaryDirectory() as tmp:
            out.append(train(cfg, Path(tmp), log=lambda _: None))
    return out


def sft_control(seconds: float, extra: list[str]) -> dict:
    """Continue the toy warm-start (same teacher, optimizer and lr) for `seconds`."""
    import torch

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import greedy_accuracy
    from rlrecipes.models import load_model, resolve_model_path
    from rlrecipes.models.toy import _sft_loss

    cfg = compose_config("train", extra)
    problems = load_problem_set(cfg.data)
    path = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None)
    model, tok = load_model(path, cfg.model)
    prompts = [render_prompt(it["problem"], "chat", tok) for it in problems.eval]
    answers = [it["answer"] for it in problems.eval]

    def accuracy() -> float:
        return greedy_accuracy(
            model, tok, prompts, answers, problems.verify, max_new_tokens=cfg.trainer.max_completion_length
        )

    before = accuracy()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.model.toy.sft_learning_rate)
    rng = random.Random(0)
    items = problems.task.train
    steps, start = 0, time.time()
    while time.time() - start < seconds:
        model.train()
        loss = _sft_loss(model, tok, rng.sample(items, cfg.model.toy.sft_batch_size), problems.task, rng)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
    return {
        "accuracy_before": before,
        "accuracy_after": accuracy(),
        "steps": steps,
        "seconds": round(time.time() - start, 1),
    }


def main() -> None:
    extra = sys.argv[1:]
    runs = rl_runs([0, 1, 2], extra)
    gains = [100 * (r["accuracy_after"] - r["accuracy_before"]) for r in runs]
    median_train = statistics.median(r["train_seconds"] for r in runs)
    control = sft_control(median_train, extra)
    sft_gain = 100 * (control["accuracy_after"] - control["accuracy_before"])
    print(
        json.dumps(
            {
                "bench": "quickstart_rl_gain",
                "seeds": [0, 1, 2],
                "accuracy_before": [round(r["accuracy_before"], 4) for r in runs],
                "accuracy_after": [round(r["accuracy_after"], 4) for r in runs],
                "gain_points_mean": round(statistics.mean(gains), 2),
                "gain_points_min": round(min(gains), 2),
                "gain_points_max": round(max(gains), 2),
                "gain_points_stdev": round(statistics.stdev(gains), 2),
                "rl_train_seconds_median": round(median_train, 1),
                "wall_seconds": [r["wall_seconds"] for r in runs],
                "sft_control": control,
                "sft_control_gain_points": round(sft_gain, 2),
                "rl_minus_sft_points": round(statistics.mean(gains) - sft_gain, 2),
            }
        )
    )


if __name__ == "__main__":
    main()

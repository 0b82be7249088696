"""TTRL on the toy task against "sharpening" without training, settings chosen on another split (3 seeds).

TTRL needs a policy whose majority vote is more often right than its single samples
(the paper's premise). The quick-start toy model imitates a teacher that is wrong 75%
of the time on carries, so its majority answer is usually the wrong one and TTRL would
sharpen the mistake; here the toy model is warm-started on a teacher wrong 30% of the
time instead. Training prompts are the first 3600 problems of the synthetic train split;
the reward is the majority vote, their answers only feed the logged diagnostics.

Three disjoint splits:
  train      train[:3600]: TTRL's (unlabelled) prompts;
  selection  train[3600:] (400 problems, `model.toy.sft_dev_size`): neither the warm-start nor TTRL trains on them
             (they are the warm-start's plateau-detection dev split). The learning rate
             and step count (grid: LEARNING_RATES x checkpoints every 20 steps up to 60,
             seed 0) and the sharpening temperature (TEMPERATURES) are picked here, by
             avg@8 (half the held-out protocol's samples, to keep the grid cheap);
  held-out   the 300 held-out problems: only the chosen settings are measured there.

The control is what TTRL's premise offers without any training (the paper's "majority
vote is a good label" argument, and the concern that RL on self-consistency mostly
sharpens the sampling distribution): the base model's avg@16 at the selected lower
temperature, its greedy accuracy and its majority answer over 16 samples at T=1.0
(maj@16, the very pseudo-label TTRL trains on).

Records (benchkit.save_result) the selection table, then on the held-out split TTRL's greedy and
avg@k (T=1.0, k = `--heldout-samples`, 16) before/after for seeds 0, 1, 2 (mean ± stdev), and
the controls; `avgk_*` and `majk_*` are avg@k and maj@k. Beside them, pass@1/4/8 (the
unbiased estimator of Chen et al. 2021 from 8 samples per problem, on the first
`--passk-problems` held-out problems) at TTRL's sampling temperature (1.0) for the untrained
model (`pass_at_k_before`) and each trained seed (`runs[i]["pass_at_k_after"]`, over seeds
`pass_at_k_after`), and at the sharpening temperature for the control: whether TTRL only
sharpens (pass@1 up, pass@8 flat or down) shows there.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchkit import (
    PASS_SAMPLES,
    parse_bench_args,
    pass_at_k_stats,
    sample_completions,
    sampled_pass_at_k,
    save_result,
    starting_model,
    stats,
)

from rlrecipes.compose import compose_config

SETTINGS = [
    "recipe=ttrl",
    "data.synthetic.teacher_error_rate=0.3",
    "model.toy.sft_max_steps=1000",
    "trainer.num_generations=16",  # votes per prompt
    "recipe.n_train=8",  # the first half trains, as 64 -> 32 in the paper
    "trainer.prompts_per_rollout=8",
    "trainer.progress=false",
]
MODES = {
    "full": {
        "seeds": [0, 1, 2],
        "learning_rates": [2e-4, 5e-5],  # the CPU preset's and a 4x lower one
        "max_steps": 60,
        "save_every": 20,
        "temperatures": [1.0, 0.7, 0.5, 0.3],
        "selection_samples": 8,
        "heldout_samples": 16,
        "passk_problems": 300,
    },
    "quick": {"seeds": [0]},
    "smoke": {
        "seeds": [0],
        "learning_rates": [2e-4],
        "max_steps": 2,
        "save_every": 2,
        "temperatures": [1.0, 0.5],
        "selection_samples": 2,
        "heldout_samples": 2,
        "passk_problems": 10,
    },
}


def run_settings(overrides: list[str]) -> list[str]:
    """SETTINGS and `overrides`, training on the train split less its tail (the selection split:
    the warm-start's dev split, `model.toy.sft_dev_size` problems)."""
    cfg = compose_config("train", [*SETTINGS, *overrides])
    train = cfg.data.synthetic.num_train - cfg.model.toy.sft_dev_size
    return [*SETTINGS, *overrides, f"data.max_examples={train}"]


def avg_at_k(outs: list[list[str]], items: list[dict], verify) -> float:
    hits = [verify(text, it["answer"]) for texts, it in zip(outs, items) for text in texts]
    return sum(hits) / len(hits)


def maj_at_k(outs: list[list[str]], items: list[dict], verify) -> float:
    """Share of problems whose most frequent extracted answer is right (no answer: wrong)."""
    from rlrecipes.grading.extract import answer_line

    right = 0
    for texts, it in zip(outs, items):
        votes = Counter(a for a in map(answer_line, texts) if a is not None)
        if votes:
            right += verify(f"Answer: {votes.most_common(1)[0][0]}", it["answer"])
    return right / len(items)


def select_settings(args, settings: list[str], selection: list[dict], verify) -> tuple[float, int, list[dict]]:
    """(learning rate, steps) with the best selection-split avg@8 over the grid, seed 0."""
    from rlrecipes.training.job import train

    table = []
    for lr in args.learning_rates:
        cfg = compose_config(
            "train",
            [
                *settings,
                "seed=0",
                f"trainer.learning_rate={lr}",
                f"trainer.max_steps={args.max_steps}",
                f"trainer.checkpoints.every={args.save_every}",
                "trainer.checkpoints.keep_last=null",
                "trainer.eval.before=false",
                "trainer.eval.after=false",
            ],
        )
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp)
            train(cfg, run, log=lambda _: None)
            for step in range(args.save_every, args.max_steps + 1, args.save_every):
                checkpoint = str(run / "checkpoints" / f"checkpoint-{step}")
                outs = sample_completions(checkpoint, cfg, selection, args.selection_samples)
                table.append(
                    {"learning_rate": lr, "steps": step, "selection_avg8": round(avg_at_k(outs, selection, verify), 4)}
                )
                print(f"selection: {table[-1]}", file=sys.stderr)
    best = max(table, key=lambda row: row["selection_avg8"])
    return best["learning_rate"], best["steps"], table


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.training.job import train

    torch.set_num_threads(1)
    started = time.time()
    settings = run_settings(args.overrides)
    base_cfg = compose_config("train", settings)
    problems = load_problem_set(base_cfg.data)
    selection_size = base_cfg.model.toy.sft_dev_size
    selection, heldout, verify = problems.task.train[-selection_size:], problems.eval, problems.verify
    trained_ids = {it["id"] for it in problems.train}
    assert not trained_ids & {it["id"] for it in selection}, "the selection split must not be trained on"
    base = starting_model(base_cfg, problems)
    build_seconds = time.time() - started

    # the sharpening control: temperature picked on the selection split, reported on held-out
    by_temperature = {
        t: round(
            avg_at_k(sample_completions(base, base_cfg, selection, args.selection_samples, t), selection, verify), 4
        )
        for t in args.temperatures
    }
    best_t = max(by_temperature, key=by_temperature.get)
    k = args.heldout_samples
    passk_items, sample_t = heldout[: args.passk_problems], base_cfg.trainer.temperature

    def pass_at_k(model: str, temperature: float = sample_t) -> dict:
        return sampled_pass_at_k(model, base_cfg, passk_items, verify, temperature)

    base_t1 = sample_completions(base, base_cfg, heldout, k, temperature=1.0)
    control = {
        "selection_avg8_by_temperature": by_temperature,
        "temperature": best_t,
        "heldout_avgk_t1": round(avg_at_k(base_t1, heldout, verify), 4),
        "heldout_avgk_sharpened": round(
            avg_at_k(sample_completions(base, base_cfg, heldout, k, temperature=best_t), heldout, verify), 4
        ),
        "heldout_majk_t1": round(maj_at_k(base_t1, heldout, verify), 4),
        "pass_at_k_sharpened": pass_at_k(base, best_t),
    }
    pass_at_k_before = pass_at_k(base)

    lr, steps, table = select_settings(args, settings, selection, verify)
    runs = []
    for seed in args.seeds:
        cfg = compose_config(
            "train", [*settings, f"seed={seed}", f"trainer.learning_rate={lr}", f"trainer.max_steps={steps}"]
        )
        with tempfile.TemporaryDirectory() as tmp:
            summary = train(cfg, Path(tmp), log=lambda _: None)
            rows = [json.loads(x) for x in (Path(tmp) / "metrics.jsonl").read_text().splitlines()]
            outs = sample_completions(str(Path(tmp) / "model"), cfg, heldout, k)
            runs.append(
                {
                    "seed": seed,
                    "greedy_before": summary["accuracy_before"],
                    "greedy_after": summary["accuracy_after"],
                    "avgk_after": round(avg_at_k(outs, heldout, verify), 4),
                    "majk_after": round(maj_at_k(outs, heldout, verify), 4),
                    "pass_at_k_after": pass_at_k(str(Path(tmp) / "model")),
                    "label_accuracy_first": rows[0].get("ttrl/label_accuracy"),
                    "label_accuracy_last": rows[-1].get("ttrl/label_accuracy"),
                }
            )
            print(f"seed {seed}: {runs[-1]}", file=sys.stderr)

    greedy_before = runs[0]["greedy_before"]
    save_result(
        args,
        {
            "setting": " ".join(settings),
            "splits": {"train": len(problems.train), "selection": len(selection), "heldout": len(heldout)},
            "selection_grid": table,
            "chosen": {"learning_rate": lr, "steps": steps, "picked_on": "selection", "reported_on": "heldout"},
            "greedy_before": greedy_before,
            "greedy_after": stats([r["greedy_after"] for r in runs]),
            "greedy_gain_points": stats([100 * (r["greedy_after"] - greedy_before) for r in runs], 2),
            "k": k,
            "avgk_before": control["heldout_avgk_t1"],
            "avgk_after": stats([r["avgk_after"] for r in runs]),
            "avgk_gain_points": stats([100 * (r["avgk_after"] - control["heldout_avgk_t1"]) for r in runs], 2),
            "majk_after": stats([r["majk_after"] for r in runs]),
            "pass_at_k": {"problems": len(passk_items), "samples": PASS_SAMPLES, "temperature": sample_t},
            "pass_at_k_before": pass_at_k_before,
            "pass_at_k_after": pass_at_k_stats([r["pass_at_k_after"] for r in runs]),
            "sharpening_control": control,
            "ttrl_avgk_minus_sharpened_points": round(
                100 * (statistics.mean(r["avgk_after"] for r in runs) - control["heldout_avgk_sharpened"]), 2
            ),
            "runs": runs,
            "model_build_seconds": round(build_seconds, 1),
        },
    )


if __name__ == "__main__":
    sys.exit(main())

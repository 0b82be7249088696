"""One-shot RLVR on the synthetic task: does training on ONE example raise held-out accuracy?

The paper's pipeline, at CPU scale, on the quick-start toy model (arithmetic, warm-started
on a teacher that forgets carries):

1. history: the same recipe on a pool of `--pool` training problems (every problem, no
   duplication) with `trainer.record_accuracy_history=true`, about 20 epochs (the paper's
   500-step DSR-sub run, ~50 epochs);
2. selection: `rank(history, "variance")`: π1 is the top example;
3. one-shot: `recipe=one_shot` on π1 duplicated to fill the batch, for seeds 0, 1, 2,
   held-out accuracy measured every `--eval-every` steps and before/after (greedy, the
   300 held-out problems), checkpoints saved every `--save-every` steps;
   controls with the same budget (steps, rows, learning rate, seeds), as the paper compares
   single examples from across its variance ranking (Sec. 3.2: π1 down to π1209, near the
   bottom): the lowest-variance example of the pool and one drawn at random from the rest
   (`--random-seed`), held-out greedy before/after;
4. the suite command: `eval_checkpoints(run, "synthetic")` (greedy + avg@8 at t=0.6 on
   the held-out split) over base + saved checkpoints: best-average and last step.

Learning rate: `--lr` (4e-5) replaces the paper's 1e-6, which does not move a 0.6M-parameter
toy model in 80 steps; at the CPU default 2e-4 the policy collapses onto the example within
three steps. Everything else is the recipe's (bnpo, KL 0.001, entropy 0.001, temperature 0.6).

Beside greedy accuracy, pass@1/4/8 (the unbiased estimator of Chen et al. 2021 from 8
samples per problem at the recipe's temperature 0.6, on the first `--passk-problems`
held-out problems): the untrained model's (`pass_at_k_before`, the start of every run) and
each run's after training, per seed and over seeds, for π1 and both controls.

Records one result (benchkit.save_result). The baselines are the same model before training (difference in
points, per seed, with mean and spread) and the two control examples trained the same
way (`pi1_minus_random_points`, `pi1_minus_lowest_variance_points`).
`post_saturation_gain_points` is held-out accuracy gained after training accuracy on π1
first reached `--saturation` (the paper's post-saturation generalisation); the first seed's plot
goes beside the result file (<result>_seed<N>.svg).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

from benchkit import (
    PASS_SAMPLES,
    parse_bench_args,
    pass_at_k_stats,
    sampled_pass_at_k,
    save_result,
    starting_model,
    stats,
)

from rlrecipes.compose import compose_config

MODES = {
    "full": {
        "seeds": [0, 1, 2],
        "pool": 32,  # problems in the history run
        "history_steps": 40,
        "prompts": 16,  # rows per rollout step (= recipe.rows)
        "steps": 80,
        "lr": 4e-5,
        "eval_every": 10,
        "save_every": 40,
        "saturation": 0.9,
        "eval_limit": 100,  # held-out problems per checkpoint eval
        "random_seed": 0,  # draws the random control example
        "passk_problems": 300,  # held-out problems for pass@k (8 samples each)
    },
    "quick": {"seeds": [0]},
    "smoke": {
        "seeds": [0],
        "pool": 8,
        "history_steps": 2,
        "prompts": 8,
        "steps": 2,
        "eval_every": 1,
        "save_every": 2,
        "eval_limit": 5,
        "passk_problems": 10,
    },
}


def history_run(args: argparse.Namespace, workdir: Path) -> dict:
    from rlrecipes.training.job import train

    cfg = compose_config(
        "train",
        [
            "recipe=one_shot",
            f"data.max_examples={args.pool}",
            f"trainer.max_steps={args.history_steps}",
            f"trainer.prompts_per_rollout={args.prompts}",
            f"trainer.learning_rate={args.lr}",
            "trainer.temperature=0.6",
            "trainer.record_accuracy_history=true",
            "trainer.eval.before=false",
            "trainer.eval.after=false",
            "trainer.progress=false",
            "seed=0",
            *args.overrides,
        ],
    )
    run = workdir / "history"
    run.mkdir()
    train(cfg, run, log=lambda _: None)
    return json.loads((run / "accuracy_history.json").read_text())


def one_shot_settings(args: argparse.Namespace, example: str, seed: int, curves: bool = True) -> list[str]:
    """The overrides of a one-shot run on `example` (π1's and the controls' differ only in it)."""
    return [
        "recipe=one_shot",
        f"recipe.examples=[{example}]",
        f"recipe.rows={args.prompts}",
        f"trainer.prompts_per_rollout={args.prompts}",
        f"trainer.max_steps={args.steps}",
        f"trainer.learning_rate={args.lr}",
        "trainer.temperature=0.6",
        f"trainer.eval.every={args.eval_every if curves else 'null'}",
        f"trainer.checkpoints.every={args.save_every if curves else 'null'}",
        "trainer.progress=false",
        f"seed={seed}",
        *args.overrides,
    ]


def one_shot_run(args: argparse.Namespace, example: str, seed: int, run: Path, pass_at_k, curves: bool = True) -> dict:
    """One one-shot run; `curves` adds the held-out curve and checkpoints (π1's runs). The
    summary gains `pass_at_k_after`, the trained model's."""
    from rlrecipes.rundir import write_manifest
    from rlrecipes.training.job import train

    cfg = compose_config("train", one_shot_settings(args, example, seed, curves))
    run.mkdir()
    write_manifest(run, cfg)
    summary = train(cfg, run, log=lambda _: None)
    return {**summary, "pass_at_k_after": pass_at_k(str(run / "model"))}


def pass_at_k_protocol(args: argparse.Namespace, example: str):
    """(pass@k of a model folder, the untrained model's pass@k, the protocol for the record):
    8 samples per problem on the first `--passk-problems` held-out problems, at the one-shot
    runs' sampling temperature."""
    from rlrecipes.data.problems import load_problem_set

    cfg = compose_config("train", one_shot_settings(args, example, args.seeds[0], curves=False))
    problems = load_problem_set(cfg.data)
    items, temperature = problems.eval[: args.passk_problems], cfg.trainer.temperature

    def pass_at_k(model: str) -> dict:
        return sampled_pass_at_k(model, cfg, items, problems.verify, temperature)

    base = starting_model(cfg, problems)
    setting = {"problems": len(items), "samples": PASS_SAMPLES, "temperature": temperature}
    return pass_at_k, pass_at_k(base), setting


def post_saturation_gain(run: Path, threshold: float) -> tuple[float | None, float | None]:
    """(first step where training accuracy >= threshold, held-out gain after it, in points)."""
    from rlrecipes.runs.plots import read_curves

    curves = read_curves(run)
    saturated = next((step for step, acc in curves.train if acc >= threshold), None)
    if saturated is None:
        return None, None
    at = [acc for step, acc in curves.heldout if step <= saturated]
    after = [acc for step, acc in curves.heldout if step > saturated]
    if not at or not after:
        return saturated, None
    return saturated, 100 * (after[-1] - at[-1])


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    from rlrecipes.runs.checkpoints import eval_checkpoints
    from rlrecipes.runs.plots import plot_run
    from rlrecipes.runs.selection import rank

    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        history = history_run(args, workdir)
        ranked = rank(history, "variance")
        pi1, last = ranked[0], ranked[-1]
        drawn = random.Random(args.random_seed).choice(sorted(x.id for x in ranked[1:-1]))
        print(f"π1 = {pi1.id} (variance {pi1.score:.4f}, history {history[pi1.id]})", file=sys.stderr)
        pass_at_k, pass_at_k_before, pass_at_k_setting = pass_at_k_protocol(args, pi1.id)
        runs, sweeps, saturation = [], [], []
        for seed in args.seeds:
            run = workdir / f"one_shot_seed{seed}"
            runs.append(one_shot_run(args, pi1.id, seed, run, pass_at_k))
            saturation.append(post_saturation_gain(run, args.saturation))
            sweeps.append(
                eval_checkpoints(run, "synthetic", [f"limit={args.eval_limit}", "progress=false"], log=lambda _: None)
            )
            if seed == args.seeds[0]:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                plot_run(run, str(args.out.with_name(f"{args.out.stem}_seed{seed}.svg")))
            print(
                f"seed {seed}: {runs[-1]['accuracy_before']:.3f} -> {runs[-1]['accuracy_after']:.3f}", file=sys.stderr
            )
        controls = {}
        for name, example in (("lowest_variance", last.id), ("random", drawn)):
            control_runs = [
                one_shot_run(args, example, seed, workdir / f"{name}_seed{seed}", pass_at_k, curves=False)
                for seed in args.seeds
            ]
            control_gains = [100 * (r["accuracy_after"] - r["accuracy_before"]) for r in control_runs]
            controls[name] = {
                "example": example,
                "variance": round(next(x.score for x in ranked if x.id == example), 4),
                "history": history[example],
                "heldout_after": [round(r["accuracy_after"], 4) for r in control_runs],
                "gain_points": stats(control_gains, 2),
                "train_accuracy_final": [r["final_metrics"].get("accuracy") for r in control_runs],
                "pass_at_k_after": [r["pass_at_k_after"] for r in control_runs],
                "pass_at_k_after_stats": pass_at_k_stats([r["pass_at_k_after"] for r in control_runs]),
            }
            print(f"{name} ({example}): gains {[round(g, 1) for g in control_gains]}", file=sys.stderr)

    gains = [100 * (r["accuracy_after"] - r["accuracy_before"]) for r in runs]
    post = [g for _, g in saturation if g is not None]
    gains_mean = statistics.mean(gains)
    save_result(
        args,
        {
            "example": {
                "pi1": pi1.id,
                "variance": round(pi1.score, 4),
                "history": history[pi1.id],
                "pool": len(history),
            },
            "steps": args.steps,
            "learning_rate": args.lr,
            "heldout_before": [round(r["accuracy_before"], 4) for r in runs],
            "heldout_after": [round(r["accuracy_after"], 4) for r in runs],
            "gain_points": stats(gains, 2),
            "pass_at_k": pass_at_k_setting,
            "pass_at_k_before": pass_at_k_before,
            "pass_at_k_after": [r["pass_at_k_after"] for r in runs],
            "pass_at_k_after_stats": pass_at_k_stats([r["pass_at_k_after"] for r in runs]),
            "train_accuracy_on_pi1_final": [r["final_metrics"].get("accuracy") for r in runs],
            "train_saturation_step": [s for s, _ in saturation],
            "post_saturation_gain_points": [None if g is None else round(g, 2) for _, g in saturation],
            "post_saturation_gain_mean": round(statistics.mean(post), 2) if post else None,
            "controls_same_budget": controls,
            "pi1_minus_random_points": round(gains_mean - controls["random"]["gain_points"]["mean"], 2),
            "pi1_minus_lowest_variance_points": round(
                gains_mean - controls["lowest_variance"]["gain_points"]["mean"], 2
            ),
            "suite_synthetic": {
                "benchmarks": list(sweeps[0].scores[sweeps[0].steps[0]]),
                "problems": args.eval_limit,
                "base_average": [round(100 * s.averages[0], 2) for s in sweeps],
                "best_average_step": [s.best_step for s in sweeps],
                "best_average": [round(100 * s.averages[s.best_step], 2) for s in sweeps],
                "last_average": [round(100 * s.averages[s.last_step], 2) for s in sweeps],
            },
        },
    )


if __name__ == "__main__":
    main()

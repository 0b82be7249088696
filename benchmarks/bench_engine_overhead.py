"""Engine overhead: median step time of `rlrecipes train` vs a plain TRL script, interleaved.

Both train the quick-start's model on the same rendered prompts with the same GRPOConfig
values (learning rate, batch plan, generations, completion length, loss, seed: taken from
the resolved config). The runs are interleaved in pairs whose order alternates (plain then
rlrecipes, rlrecipes then plain, ...) so machine drift and a busy machine hit both; the
first `warmup` steps of each run are left out. Each pair gives one ratio (median rlrecipes
step / median plain step of that pair); the result is their mean with its sample standard
deviation and 95% confidence half-width over `pairs` pairs: the overhead is resolved when
the half-width is below the effect (the issue asks for +-2%). Both sides load one private copy
of the model folder, so a process rebuilding the shared cache meanwhile cannot change or
remove it halfway. `ratio_pooled` is the ratio
of the medians over all steps. `ratio_per_completion_token` divides each step's time by its
mean completion length first, so the two runs' policies drifting to longer or shorter
answers does not count. Target ratio <= 1.05.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import ci95_halfwidth, parse_bench_args, save_result, stats

HERE = Path(__file__).resolve().parent
MODES = {
    # 24 pairs: on a quiet 2-core machine a pair's ratio spreads by ~4% (sd), so 16 pairs resolved
    # the mean to ±2.2% (1.001, 2026-12-05); the issue asks for ±2%, and the interval shrinks as
    # 1/sqrt(pairs). About 14 minutes.
    "full": {"steps": 40, "pairs": 24, "warmup": 3},
    "quick": {"steps": 20, "pairs": 4, "warmup": 3},
    "smoke": {"steps": 3, "pairs": 1, "warmup": 1},
}


def per_token(step_times: list[float], mean_lengths: list[float], warmup: int) -> list[float]:
    """Seconds per generated token of each step after warm-up: the runs' policies drift
    apart, and a step's cost follows how long its completions are."""
    return [t / n for t, n in list(zip(step_times, mean_lengths))[warmup:] if n]


def plain_grpo_args(cfg, steps: int) -> dict:
    """The GRPOConfig values `rlrecipes train` derives from `cfg` (engine/grpo_args.py), as
    plain values for the TRL script."""
    from rlrecipes.engine.grpo_args import plan_batches

    t, r = cfg.trainer, cfg.recipe
    plan = plan_batches(t)
    return {
        "max_steps": steps,
        "seed": cfg.seed,
        "learning_rate": t.learning_rate,
        "lr_scheduler_type": str(t.lr_scheduler_type),
        "weight_decay": t.weight_decay,
        "adam_beta1": t.adam_beta1,
        "adam_beta2": t.adam_beta2,
        "max_grad_norm": t.max_grad_norm,
        "per_device_train_batch_size": plan.per_device_batch,
        "gradient_accumulation_steps": plan.grad_accum,
        "steps_per_generation": plan.steps_per_generation,
        "num_generations": t.num_generations,
        "num_iterations": t.num_iterations,
        "max_completion_length": t.max_completion_length,
        "temperature": t.temperature,
        "top_p": t.top_p,
        "top_k": t.top_k,
        "loss_type": str(r.loss_type),
        "beta": r.beta,
        "epsilon": r.epsilon,
        "scale_rewards": str(r.scale_rewards),
    }


def plain_run(model_dir: str, files: tuple[Path, Path], threads: int, out: Path, warmup: int) -> tuple[list, list]:
    rows_file, args_file = files
    command = [sys.executable, str(HERE / "plain_trl_grpo.py"), model_dir, str(rows_file), str(args_file)]
    done = subprocess.run([*command, str(out), str(threads)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"plain TRL run failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    record = json.loads(done.stdout.strip().splitlines()[-1])
    times = record["step_times"]
    return times[warmup:], per_token(times, record["completion_lengths"], warmup)


def rlrecipes_run(overrides: list[str], steps: int, run_dir: Path, warmup: int) -> tuple[list, list]:
    command = [sys.executable, "-m", "rlrecipes.cli", "train", *overrides, f"trainer.max_steps={steps}"]
    command += [
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "trainer.checkpoints.every=null",
        f"run_dir={run_dir}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
    if done.returncode != 0:
        raise SystemExit(f"rlrecipes run failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    times = [r["step_time"] for r in rows]
    return times[warmup:], per_token(times, [r["completion_length_mean"] for r in rows], warmup)


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch
    from transformers import AutoTokenizer

    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models import resolve_model_path

    steps, warmup = args.steps, args.warmup
    cfg = compose_config("train", [*args.overrides, f"trainer.max_steps={steps}"])
    problems = load_problem_set(cfg.data)
    shared = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, cfg.cache_dir, log=lambda _: None)
    threads = cfg.trainer.cpu_threads or torch.get_num_threads()
    pairs = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = str(shutil.copytree(shared, Path(tmp) / "model"))
        overrides = [*args.overrides, f"model.name_or_path={model_dir}"]
        tok = AutoTokenizer.from_pretrained(model_dir)
        rows = [
            {
                "prompt": render_prompt(p["problem"], cfg.data.template, tok, cfg.data.system_prompt),
                "answer": p["answer"],
            }
            for p in problems.train
        ]
        files = (Path(tmp) / "rows.json", Path(tmp) / "grpo_args.json")
        files[0].write_text(json.dumps(rows))
        files[1].write_text(json.dumps(plain_grpo_args(cfg, steps)))
        for i in range(args.pairs):
            run_plain = (model_dir, files, threads, Path(tmp) / f"plain{i}", warmup)
            run_ours = (overrides, steps, Path(tmp) / f"ours{i}", warmup)
            if i % 2:  # the order alternates: whichever runs second may find a warmer or busier machine
                o = rlrecipes_run(*run_ours)
                p = plain_run(*run_plain)
            else:
                p = plain_run(*run_plain)
                o = rlrecipes_run(*run_ours)
            pairs.append({"plain": p, "ours": o})
            ratio = statistics.median(o[0]) / statistics.median(p[0])
            print(f"[bench] pair {i + 1}/{args.pairs}: ratio {ratio:.3f}", file=sys.stderr)

    def ratios(which: int) -> list[float]:
        return [statistics.median(x["ours"][which]) / statistics.median(x["plain"][which]) for x in pairs]

    step_ratios, token_ratios = ratios(0), ratios(1)
    ours_all = [t for x in pairs for t in x["ours"][0]]
    plain_all = [t for x in pairs for t in x["plain"][0]]
    save_result(
        args,
        {
            "ratio": stats(step_ratios, 4),
            "ratio_ci95_halfwidth": round(ci95_halfwidth(step_ratios), 4),
            "ratio_per_pair": [round(r, 4) for r in step_ratios],
            "ratio_pooled": round(statistics.median(ours_all) / statistics.median(plain_all), 4),
            "ratio_per_completion_token": stats(token_ratios, 4),
            "median_step_seconds_rlrecipes": round(statistics.median(ours_all), 4),
            "median_step_seconds_plain_trl": round(statistics.median(plain_all), 4),
            "target_ratio_max": 1.05,
            "threads": threads,
        },
    )


if __name__ == "__main__":
    main()

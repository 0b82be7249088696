"""Engine overhead: median step time of `rlrecipes train` vs a plain TRL script, side by side.

Both train the quick-start's model on the same rendered prompts with the same GRPOConfig
values (learning rate, batch plan, generations, completion length, loss, seed: taken from
the resolved config). Where the machine has a core for each (2 x the run's threads), every
pair of runs goes side by side, each pinned to its own cores, the cores swapped from one pair
to the next: the plain run builds its trainer and waits, the rlrecipes run starts, and the plain
run trains from the rlrecipes run's first logged step on (so a start-up slowed by a busy machine
cannot leave one run finished before the other trains); only the steps both runs spent training
at the same time are compared (each step's end is on the clock: metrics.jsonl's `wall_time`), so a
machine that slows down or speeds up does it to both sides of a ratio. Run one after the
other, a pair's ratio spread by 4-6% (sd) on a 2-core VM (24 pairs, b35c879), too much to
resolve the overhead to the +-2% it is asked for. On a machine with fewer cores the pairs
run one after the other in alternating order instead, and the result says which layout it
used. The first `warmup` steps of each run are left out. Both sides time a step the same
way: the wall time from one step's end to the next (not TRL's `training_step_time`, which
leaves out the optimizer step and every callback: the engine's own work).

Each pair gives one ratio (median rlrecipes step / median plain step over its compared
steps); the result is their mean with its sample standard deviation and 95% confidence
half-width over `pairs` pairs: the overhead is resolved when the half-width is below the
effect. Both sides load one private copy of the model folder, so a process rebuilding the
shared cache meanwhile cannot change or remove it halfway. `ratio_pooled` is the ratio of
the medians over all compared steps. `ratio_per_completion_token` divides each step's time
by its mean completion length first, so the two runs' policies drifting to longer or shorter
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
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from benchkit import ci95_halfwidth, parse_bench_args, save_result, starting_model, stats

HERE = Path(__file__).resolve().parent
MODES = {
    # A quick-start step takes a fraction of a second on one core and a run seconds to start:
    # runs long enough that most of their steps overlap the other side's (the result records
    # how many steps each pair compared). Side by side a pair's ratio still spreads by ~3% (sd;
    # the stored result's ratio_per_pair), so 24 pairs resolve the mean to about +-1.5%; about
    # 15 minutes.
    "full": {"steps": 150, "pairs": 24, "warmup": 3},
    "quick": {"steps": 60, "pairs": 4, "warmup": 3},
    "smoke": {"steps": 60, "pairs": 1, "warmup": 1},  # enough steps to overlap after the start-ups
}


@dataclass(frozen=True)
class Steps:
    """One run's steps: seconds each took, when each ended (unix seconds), mean completion length."""

    times: list[float]
    ends: list[float]
    lengths: list[float]

    def after(self, warmup: int) -> Steps:
        return Steps(self.times[warmup:], self.ends[warmup:], self.lengths[warmup:])

    def within(self, start: float, end: float) -> Steps:
        """The steps that began at or after `start` and ended by `end`."""
        keep = [i for i, (t, e) in enumerate(zip(self.times, self.ends)) if e - t >= start and e <= end]
        return Steps(*([xs[i] for i in keep] for xs in (self.times, self.ends, self.lengths)))

    def per_token(self) -> list[float]:
        """Seconds per generated token of each step: the runs' policies drift apart, and a
        step's cost follows how long its completions are."""
        return [t / n for t, n in zip(self.times, self.lengths) if n]


def overlapping(ours: Steps, plain: Steps) -> tuple[Steps, Steps]:
    """The steps each run spent while the other one was training too."""
    if not ours.times or not plain.times:
        return ours, plain
    start = max(ours.ends[0] - ours.times[0], plain.ends[0] - plain.times[0])
    end = min(ours.ends[-1], plain.ends[-1])
    return ours.within(start, end), plain.within(start, end)


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


class Run:
    """One training run started in the background, its output in files (two runs side by side
    never block on a full pipe), pinned to `cores` when given."""

    def __init__(self, command: list[str], folder: Path, cores: set[int] | None):
        folder.mkdir(parents=True)
        self.folder, self.name = folder, folder.name
        self.out, self.err = (folder / "stdout").open("w"), (folder / "stderr").open("w")
        pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
        env = {**os.environ, "COLUMNS": "120"}
        self.process = subprocess.Popen(command, stdout=self.out, stderr=self.err, env=env, preexec_fn=pin)

    def wait(self) -> str:
        """Its stdout, once it finished; a failed run ends the bench with its last line."""
        code = self.process.wait()
        self.out.close()
        self.err.close()
        stdout, stderr = ((self.folder / f).read_text() for f in ("stdout", "stderr"))
        if code != 0:
            raise SystemExit(f"{self.name} run failed: {(stderr or stdout).strip().splitlines()[-1:]}")
        return stdout

    def wait_for(self, path: Path, timeout_s: float = 1800) -> None:
        """Until `path` exists and is not empty; a run that ends first (or hangs) ends the bench."""
        deadline = time.monotonic() + timeout_s
        while not (path.exists() and path.stat().st_size > 0):
            if self.process.poll() is not None:
                self.wait()  # a failed run ends the bench with its last line
                raise SystemExit(f"{self.name} run ended before it wrote {path.name}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{self.name} run wrote no {path.name} in {timeout_s:.0f} s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill it if it still runs (its partner failed: nothing is left to compare it with)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_plain(model_dir: str, files: tuple[Path, Path], threads: int, folder: Path, cores: set[int] | None) -> Run:
    """The plain TRL run; side by side (`cores` given) it waits for its go file (folder/go) to train."""
    rows_file, args_file = files
    script = str(HERE / "plain_trl_grpo.py")
    out = folder / "trainer"
    command = [sys.executable, script, model_dir, str(rows_file), str(args_file), str(out), str(threads)]
    return Run(command + [str(folder / "go")] * bool(cores), folder, cores)


def plain_steps(run: Run) -> Steps:
    record = json.loads(run.wait().strip().splitlines()[-1])
    return Steps(record["step_times"], record["step_ends"], record["completion_lengths"])


def start_ours(overrides: list[str], steps: int, folder: Path, cores: set[int] | None) -> Run:
    command = [sys.executable, "-m", "rlrecipes.cli", "train", *overrides, f"trainer.max_steps={steps}"]
    command += [
        "trainer.eval.before=false",
        "trainer.eval.after=false",
        "trainer.checkpoints.every=null",
        f"run_dir={folder / 'run'}",
    ]
    return Run(command, folder, cores)


def our_steps(run: Run) -> Steps:
    run.wait()
    rows = [json.loads(line) for line in (run.folder / "run" / "metrics.jsonl").read_text().splitlines()]
    return Steps(
        [r["step_time"] for r in rows],
        [r["wall_time"] for r in rows],
        [r.get("completion_length_mean", 0) for r in rows],
    )


def core_sets(threads: int) -> tuple[set[int], set[int]] | None:
    """Two disjoint sets of `threads` cores for two runs side by side, or None when the machine
    has fewer than twice as many."""
    usable = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(usable) < 2 * threads:
        return None
    return set(usable[:threads]), set(usable[threads : 2 * threads])


def run_pair(
    i: int, start: tuple[Callable, Callable], cores: tuple[set[int], set[int]] | None, warmup: int
) -> tuple[Steps, Steps]:
    """Pair `i`: side by side on swapped cores when `cores` is given, else one after the other
    in alternating order (whichever runs second may find a warmer or busier machine)."""
    begin_ours, begin_plain = start
    if cores is not None:
        mine, theirs = cores if i % 2 == 0 else cores[::-1]
        plain_run = begin_plain(theirs)
        try:
            go = plain_run.folder / "go"
            plain_run.wait_for(Path(f"{go}.ready"))  # its trainer is built
            ours_run = begin_ours(mine)
            try:
                ours_run.wait_for(ours_run.folder / "run" / "metrics.jsonl")  # it has trained a step
                go.touch()
                ours, plain = our_steps(ours_run), plain_steps(plain_run)
            finally:
                ours_run.stop()
        finally:
            plain_run.stop()
        return overlapping(ours.after(warmup), plain.after(warmup))
    if i % 2:
        ours = our_steps(begin_ours(None))
        plain = plain_steps(begin_plain(None))
    else:
        plain = plain_steps(begin_plain(None))
        ours = our_steps(begin_ours(None))
    return ours.after(warmup), plain.after(warmup)


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch
    from transformers import AutoTokenizer

    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt

    steps, warmup = args.steps, args.warmup
    cfg = compose_config("train", [*args.overrides, f"trainer.max_steps={steps}"])
    problems = load_problem_set(cfg.data)
    shared = starting_model(cfg, problems)
    threads = cfg.trainer.cpu_threads or torch.get_num_threads()
    cores = core_sets(threads)
    pairs: list[tuple[Steps, Steps]] = []
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
            start = (
                partial(start_ours, overrides, steps, Path(tmp) / f"rlrecipes{i}"),
                partial(start_plain, model_dir, files, threads, Path(tmp) / f"plain{i}"),
            )
            ours, plain = run_pair(i, start, cores, warmup)
            if not ours.times or not plain.times:
                raise SystemExit(
                    f"pair {i + 1}: the two runs shared no training steps to compare; raise the steps "
                    f"(--steps, now {steps})"
                )
            pairs.append((ours, plain))
            ratio = statistics.median(ours.times) / statistics.median(plain.times)
            print(
                f"[bench] pair {i + 1}/{args.pairs}: ratio {ratio:.3f} over {len(ours.times)} / {len(plain.times)} steps",
                file=sys.stderr,
            )

    step_ratios = [statistics.median(o.times) / statistics.median(p.times) for o, p in pairs]
    token_ratios = [statistics.median(o.per_token()) / statistics.median(p.per_token()) for o, p in pairs]
    ours_all = [t for o, _ in pairs for t in o.times]
    plain_all = [t for _, p in pairs for t in p.times]
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
            "compared_steps_per_pair": stats([min(len(o.times), len(p.times)) for o, p in pairs], 1),
            "layout": "side by side" if cores else "one after the other",
            "target_ratio_max": 1.05,
            "threads": threads,
        },
    )


if __name__ == "__main__":
    main()

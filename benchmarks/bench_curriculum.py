"""A length curriculum for RL (QwenLong-L1, Wan et al. 2025, arXiv 2505.17667 §3) against training at the
longest length from the start, same total RL steps, 3 seeds.

The toy analogue of the paper's progressive context scaling (`pipeline=toy_length_curriculum`):
synthetic arithmetic, whose prompt length in the toy tokenizer's tokens (chat template
included) grows with the operands' digits ("7+5" 5 tokens, "17+5" 6, "37+48" 7). Every arm
starts from the same warm-up SFT (one per seed, `warmup_steps` on the correct solutions) and
takes `phase1_steps + phase2_steps` GRPO steps:

  curriculum:       phase 1 on prompts of at most `short_tokens` tokens, then phase 2 on all
                    prompts up to `long_tokens`, from phase 1's model and optimizer state;
  curriculum_retro: the same, with phase 1's hard examples (mean accuracy below 0.5 there)
                    carried into phase 2, each repeated round(1 / mean accuracy) times
                    (retrospective sampling, rlrecipes/training/curriculum.py);
  longest:          one phase on all prompts up to `long_tokens` from the start.

The phases run as `rlrecipes stages` runs them (each phase's data prepared by
rlrecipes.training.phase_data, then `rlrecipes train` on it), in this process. Measured:
greedy accuracy on every held-out problem, overall and per prompt length in tokens, for the
warm-up model and each arm's final model; the phases' data counts (kept by the limit, carried).

Records (benchkit.save_result): per arm, accuracy per seed and mean ± sample stdev overall and
per length bucket; the warm-up model's; `retro_minus_plain_points` and
`curriculum_minus_longest_points` on the longest bucket and overall; each arm's CPU seconds.

The toy's prompts are short (5-7 tokens) and its short prompts are not the easy ones, so this
tests the schedule's mechanics at the same budget, not long-document reading. Cost (measured
2026-12-04 with the process's CPU time, the wall time on an idle core): 89 s per seed (the
warm-up and three arms of 120 RL steps); full mode (`python benchmarks/bench_curriculum.py`)
is about 5 minutes on an idle 2-core machine (the arithmetic toy is the quick-start's, usually
cached already), 22 at a load average of 10.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import parse_bench_args, save_result, stats

from rlrecipes.training.stages import compose_pipeline, plan, stage_config, state

ARMS = ["curriculum", "curriculum_retro", "longest"]
MODES = {
    "full": {
        "seeds": [0, 1, 2],
        "arms": ARMS,
        "warmup_steps": 60,
        "phase1_steps": 60,
        "phase2_steps": 60,
        "short_tokens": 6,
        "long_tokens": 7,
    },
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "warmup_steps": 3, "phase1_steps": 2, "phase2_steps": 2},
}
QUIET = ["trainer.progress=false", "trainer.checkpoints.every=null"]


def pipeline_for(arm: str, seed: int, args: Any, extra: list[str]) -> Any:
    """The toy_length_curriculum pipeline changed into `arm` (a composed stages config)."""
    cfg = compose_pipeline(
        [
            "pipeline=toy_length_curriculum",
            f"seed={seed}",
            *QUIET,
            *extra,
            f"warmup.trainer.max_steps={args.warmup_steps}",
            f"phase1.trainer.max_steps={args.phase1_steps}",
            f"phase1.trainer.checkpoints.every={args.phase1_steps}",  # its last step: phase 2's optimizer state
            f"phase2.trainer.max_steps={args.phase2_steps}",
        ]
    )
    warmup, phase1, phase2 = cfg.pipeline.stages
    phase1.phase.max_input_tokens = args.short_tokens
    phase2.phase.max_input_tokens = args.long_tokens
    phase2.phase.retrospective.enabled = arm == "curriculum_retro"
    if arm == "longest":  # one phase, all lengths, both phases' steps
        phase2.model_from = "warmup"
        phase2.overrides.append(f"trainer.max_steps={args.phase1_steps + args.phase2_steps}")
        del cfg.pipeline.stages[1]
    return cfg


def run_pipeline(cfg: Any, parent: Path, warmup: Path | None) -> list[Any]:
    """Every stage in order, in this process, as `rlrecipes stages` runs them; a finished
    warm-up (`warmup`, the seed's shared one) is copied in instead of trained again."""
    from rlrecipes.training.job import train
    from rlrecipes.training.phase_data import prepare
    from rlrecipes.training.sft import sft

    stages = plan(cfg)
    if warmup is not None:
        shutil.copytree(warmup, stages[0].run_dir(parent))
    for stage in stages:
        if state(stage, parent) == "finished":
            continue
        if stage.phase is not None:
            prepare(stage, parent, stages, stage_config(stage, parent, stages, phase_data=False), lambda _: None)
        command = sft if stage.command == "sft" else train
        command(stage_config(stage, parent, stages), stage.run_dir(parent), log=lambda _: None)
    return stages


def accuracy_by_length(model_dir: Path, cfg: Any, stage_name: str) -> dict[str, Any]:
    """Greedy accuracy on every held-out problem of `cfg` (a phase's config), overall and per
    prompt length in tokens (counted as the phases count them)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model
    from rlrecipes.training.phase_data import prompt_tokens

    problems = load_problem_set(cfg.data)
    tokens = prompt_tokens(cfg, stage_name)
    model, tok = load_model(str(model_dir), cfg.model)
    prompts = [render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt) for it in problems.eval]
    outs = generate_completions(model, tok, prompts, max_new_tokens=cfg.trainer.max_completion_length)
    hits: dict[int, list[bool]] = {}
    for (text,), it in zip(outs, problems.eval):
        hits.setdefault(tokens(it["problem"]), []).append(problems.verify(text, it["answer"]))
    every = [h for hs in hits.values() for h in hs]
    return {
        "overall": round(sum(every) / len(every), 4),
        "by_tokens": {str(n): round(sum(hs) / len(hs), 4) for n, hs in sorted(hits.items())},
        "count_by_tokens": {str(n): len(hs) for n, hs in sorted(hits.items())},
    }


def run_seed(seed: int, args: Any, extra: list[str], scratch: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    warmup = None
    for arm in args.arms:
        parent = scratch / f"seed{seed}-{arm}"
        cpu = time.process_time()
        cfg = pipeline_for(arm, seed, args, extra)
        stages = run_pipeline(cfg, parent, warmup)
        warmup = stages[0].run_dir(parent)
        last = stages[-1]
        final_cfg = stage_config(last, parent, stages)
        if "warmup" not in out:
            out["warmup"] = accuracy_by_length(warmup / "model", final_cfg, last.name)
        phases = {
            s.name: {
                k: v
                for k, v in json.loads((parent / f"{s.index}-{s.name}-data" / "phase.json").read_text()).items()
                if k in ("max_input_tokens", "kept", "carried_examples", "carried_rows", "train_rows")
            }
            for s in stages
            if s.phase is not None
        }
        steps = sum(json.loads((s.run_dir(parent) / "summary.json").read_text())["steps"] for s in stages[1:])
        out[arm] = {**accuracy_by_length(last.run_dir(parent) / "model", final_cfg, last.name)}
        # this process's CPU time (all threads): the wall time on an otherwise idle core, whatever the load;
        # the first arm's includes the seed's warm-up SFT
        out[arm].update(phases=phases, rl_steps=steps, cpu_seconds=round(time.process_time() - cpu, 1))
        print(f"seed {seed} {arm}: {out[arm]['overall']:.3f} {out[arm]['by_tokens']}", file=sys.stderr)
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    buckets = runs[0]["by_tokens"]
    return {
        "overall": stats([r["overall"] for r in runs]),
        "by_tokens": {n: stats([r["by_tokens"][n] for r in runs]) for n in buckets},
        "overall_per_seed": [r["overall"] for r in runs],
        **(
            {
                "rl_steps": runs[0]["rl_steps"],
                "phases": [r["phases"] for r in runs],
                "cpu_seconds": [r["cpu_seconds"] for r in runs],
            }
            if "rl_steps" in runs[0]
            else {}
        ),
        "count_by_tokens": runs[0]["count_by_tokens"],
    }


def difference(runs: dict[str, list[dict]], a: str, b: str, key: str | None) -> dict[str, float] | None:
    """Points of `a` minus `b`, seed by seed (same warm-up), on bucket `key` (None: overall)."""
    if a not in runs or b not in runs:
        return None
    pick = (lambda r: r["overall"]) if key is None else (lambda r: r["by_tokens"][key])
    return stats([100 * (pick(x) - pick(y)) for x, y in zip(runs[a], runs[b])], 2)


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown:
        raise SystemExit(f"--arms {unknown[0]} is unknown; valid: {', '.join(ARMS)}")
    seeds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            seeds.append(run_seed(seed, args, args.overrides, Path(tmp)))
    arms = {arm: [s[arm] for s in seeds] for arm in ["warmup", *args.arms]}
    longest = max(seeds[0]["warmup"]["by_tokens"], key=int)
    result = {
        "data": "arithmetic",
        "warmup_steps": args.warmup_steps,
        "phase_steps": [args.phase1_steps, args.phase2_steps],
        "input_tokens": [args.short_tokens, args.long_tokens],
        "longest_bucket": longest,
        "arms": {arm: summarise(rs) for arm, rs in arms.items()},
        "retro_minus_plain_points": {
            "overall": difference(arms, "curriculum_retro", "curriculum", None),
            "longest_bucket": difference(arms, "curriculum_retro", "curriculum", longest),
        },
        "curriculum_minus_longest_points": {
            "overall": difference(arms, "curriculum", "longest", None),
            "longest_bucket": difference(arms, "curriculum", "longest", longest),
        },
    }
    save_result(args, result)


if __name__ == "__main__":
    main()

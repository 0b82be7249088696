"""A length curriculum for RL (QwenLong-L1, Wan et al. 2025, arXiv 2505.17667 §3) on long
documents with the answer hidden among distractors, against training at the longest length from
the start, same total RL steps, 3 seeds.

The task (`pipeline=toy_long_documents`, rlrecipes/data/long_documents.py): a question about
one invented person of the fact base, then a document of that person's one-line passage and
0, 1, 2, 4 or 8 distractor passages about other people, so the prompt grows from 50 to 226 of
the toy's tokens. The toy (model=toy_long_documents) is "pretrained" on the one-distractor
documents only, over 4000 training people: it reads those and is left to learn the others, as a
model pretrained on a short context is; held-out people are never seen in training. Every
arm starts from the same warm-up SFT (one per seed, `warmup_steps` on the correct answers, the
paper's warm-up stage) and takes `phase1_steps + phase2_steps` GRPO steps:

  curriculum:       phase 1 on the documents of at most `short_distractors` distractors, then
                    phase 2 on all of them, from phase 1's model and optimizer state;
  curriculum_retro: the same, with phase 1's hard examples (mean reward below 0.5 there)
                    carried into phase 2, each repeated round(1 / mean reward) times
                    (retrospective sampling, rlrecipes/training/curriculum.py);
  longest:          one phase on all documents from the start.

The phases' limits are in tokens, as `rlrecipes stages` counts them: the longest prompt with
`short_distractors` distractors, then the longest of all. The phases run as `rlrecipes stages`
runs them (each phase's data prepared by rlrecipes.training.phase_data, then `rlrecipes train`
on it), in this process. Measured: greedy accuracy on every held-out document, overall and per
distractor count, for the toy (its warm-start's imitation of the one-distractor answers, before any
stage; one toy for every seed), the warm-up model and each arm's final model; the phases' data counts.

Records (benchkit.save_result): per arm, accuracy per seed and mean ± sample stdev overall and
per distractor count; `retro_minus_plain_points` and `curriculum_minus_longest_points` on the
most distractors and overall; each arm's CPU seconds. Sampled pass@k is left out: with
documents of ~140 tokens on average, 8 samples of every held-out document for 13 models would
cost as much as the training.

What the toy brings: the stored result's `toy` (its accuracy per distractor count) and
`toy_warm_start`. The previous toy, warm-started on all lengths over 400 people with a lazy
teacher, never learned to read (about 1 / (n + 1) right with n distractors, a guess among the
document's cities), so no schedule could show anything (the result stored at 92cde63).

Cost: see the estimate above MODES.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import parse_bench_args, save_result, starting_model, stats

from rlrecipes.training.stages import compose_pipeline, plan, stage_config, state

ARMS = ["curriculum", "curriculum_retro", "longest"]
# Cost of full mode: the stored result's `wall_seconds` (one process, one thread), the first
# time with the toy's warm-start (3000 steps of 32 one-distractor documents, cached after), and
# each arm's `cpu_seconds` per seed (10 warm-up SFT steps, 50 + 50 GRPO steps in each curriculum
# arm and 100 in `longest`, 8 prompts x 8 samples, and reading the 250 held-out documents).
# --smoke: under a minute.
MODES = {
    "full": {
        "seeds": [0, 1, 2],
        "arms": ARMS,
        "warmup_steps": 10,
        "phase1_steps": 50,
        "phase2_steps": 50,
        "distractors": [0, 1, 2, 4, 8],
        "short_distractors": 2,
        "num_train": 20000,
        "num_eval": 250,
    },
    "quick": {"seeds": [0]},
    # the smoke toy (benchkit.SMOKE_MODEL) on 30 training and 10 held-out people (its warm-start
    # holds back 20 of the 30 one-distractor documents for its dev check)
    "smoke": {
        "seeds": [0],
        "warmup_steps": 2,
        "phase1_steps": 2,
        "phase2_steps": 2,
        "distractors": [0, 1, 4],
        "short_distractors": 1,
        "num_train": 90,
        "num_eval": 30,
    },
}
QUIET = ["trainer.progress=false", "trainer.checkpoints.every=null"]
# on top of benchkit.SMOKE_MODEL: its 300 warm-start steps on documents are minutes, not seconds
SMOKE_TOY = ["model.toy.sft_max_steps=40", "model.toy.sft_eval_every=20"]


def phase_limits(args: Any) -> tuple[int, int]:
    """The phases' input-length limits in the toy's tokens: the longest held-out prompt with at
    most `short_distractors` distractors, and the longest of all (every name and city has the
    same length, so these are every document's lengths too)."""
    from rlrecipes.data.synthetic import make_task
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models.toy import build_tokenizer

    cfg = compose_pipeline(["pipeline=toy_long_documents", *task_overrides(args)])
    warmup_cfg = stage_config(plan(cfg)[0], Path(tempfile.gettempdir()), plan(cfg))
    task, tok = make_task(warmup_cfg.data.synthetic), build_tokenizer()

    def tokens(item: dict[str, Any]) -> int:
        return len(tok(render_prompt(item["problem"], "chat", tok), add_special_tokens=False)["input_ids"])

    short = max(tokens(it) for it in task.eval if it["distractors"] <= args.short_distractors)
    return short, max(tokens(it) for it in task.eval)


def task_overrides(args: Any) -> list[str]:
    return [
        f"data.synthetic.distractors=[{','.join(map(str, args.distractors))}]",
        f"data.synthetic.num_train={args.num_train}",
        f"data.synthetic.num_eval={args.num_eval}",
    ]


def pipeline_for(arm: str, seed: int, args: Any, extra: list[str], limits: tuple[int, int]) -> Any:
    """The toy_long_documents pipeline changed into `arm` (a composed stages config), its phases'
    input-length limits `limits` (phase_limits)."""
    cfg = compose_pipeline(
        [
            "pipeline=toy_long_documents",
            f"seed={seed}",
            *QUIET,
            *extra,
            *task_overrides(args),
            f"warmup.trainer.max_steps={args.warmup_steps}",
            f"phase1.trainer.max_steps={args.phase1_steps}",
            f"phase1.trainer.checkpoints.every={args.phase1_steps}",  # its last step: phase 2's optimizer state
            f"phase2.trainer.max_steps={args.phase2_steps}",
        ]
    )
    warmup, phase1, phase2 = cfg.pipeline.stages
    # the smoke toy's 40 warm-start steps write no answer yet: the pre-flight would refuse its RL stages
    if getattr(args, "mode", "full") == "smoke":
        phase1.overrides.append("trainer.preflight=false")
        phase2.overrides.append("trainer.preflight=false")
    phase1.phase.max_input_tokens, phase2.phase.max_input_tokens = limits
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


def accuracy_by_distractors(model_dir: Path, cfg: Any) -> dict[str, Any]:
    """Greedy accuracy on every held-out document of `cfg`'s task (a stage's config on its
    synthetic data), overall and per distractor count."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model

    problems = load_problem_set(cfg.data)
    model, tok = load_model(str(model_dir), cfg.model)
    prompts = [render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt) for it in problems.eval]
    outs = generate_completions(model, tok, prompts, max_new_tokens=cfg.trainer.max_completion_length)
    hits: dict[int, list[bool]] = {}
    for (text,), it in zip(outs, problems.eval):
        hits.setdefault(it["distractors"], []).append(problems.verify(text, it["answer"]))
    every = [h for hs in hits.values() for h in hs]
    return {
        "overall": round(sum(every) / len(every), 4),
        "by_distractors": {str(n): round(sum(hs) / len(hs), 4) for n, hs in sorted(hits.items())},
        "count_by_distractors": {str(n): len(hs) for n, hs in sorted(hits.items())},
    }


def run_seed(
    seed: int, args: Any, extra: list[str], limits: tuple[int, int], scratch: Path, out: dict[str, Any]
) -> dict[str, Any]:
    """The seed's arms (and, the first time, the toy's accuracy into `out`)."""
    runs: dict[str, Any] = {}
    warmup = None
    for arm in args.arms:
        parent = scratch / f"seed{seed}-{arm}"
        cpu = time.process_time()
        cfg = pipeline_for(arm, seed, args, extra, limits)
        stages = run_pipeline(cfg, parent, warmup)
        warmup = stages[0].run_dir(parent)
        own_data = stage_config(stages[-1], parent, stages, phase_data=False)  # the synthetic task
        if "toy" not in out:  # the model the warm-up started from: the cached toy, one for every seed
            toy = Path(starting_model(stage_config(stages[0], parent, stages)))  # cached by the warm-up stage
            out["toy"] = accuracy_by_distractors(toy, own_data)
            report = json.loads((toy / "warm_start.json").read_text())
            out["toy_warm_start"] = {k: report[k] for k in ("steps", "dev_accuracy", "plateaued")}
        if "warmup" not in runs:
            runs["warmup"] = accuracy_by_distractors(warmup / "model", own_data)
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
        runs[arm] = accuracy_by_distractors(stages[-1].run_dir(parent) / "model", own_data)
        # this process's CPU time (all threads): the wall time on an otherwise idle core, whatever the load;
        # the first arm's includes the seed's warm-up SFT (and the first seed's the toy's build)
        runs[arm].update(phases=phases, rl_steps=steps, cpu_seconds=round(time.process_time() - cpu, 1))
        print(f"seed {seed} {arm}: {runs[arm]['overall']:.3f} {runs[arm]['by_distractors']}", file=sys.stderr)
    return runs


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    counts = runs[0]["by_distractors"]
    return {
        "overall": stats([r["overall"] for r in runs]),
        "by_distractors": {n: stats([r["by_distractors"][n] for r in runs]) for n in counts},
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
        "count_by_distractors": runs[0]["count_by_distractors"],
    }


def difference(runs: dict[str, list[dict]], a: str, b: str, key: str | None) -> dict[str, float] | None:
    """Points of `a` minus `b`, seed by seed (same warm-up), at distractor count `key` (None: overall)."""
    if a not in runs or b not in runs:
        return None
    pick = (lambda r: r["overall"]) if key is None else (lambda r: r["by_distractors"][key])
    return stats([100 * (pick(x) - pick(y)) for x, y in zip(runs[a], runs[b])], 2)


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    unknown = sorted(set(args.arms) - set(ARMS))
    if unknown:
        raise SystemExit(f"--arms {unknown[0]} is unknown; valid: {', '.join(ARMS)}")
    if args.short_distractors not in args.distractors or args.short_distractors == max(args.distractors):
        raise SystemExit(
            f"--short-distractors {args.short_distractors}: give one of --distractors {args.distractors} "
            "below the largest (phase 1's documents)"
        )
    limits = phase_limits(args)
    if args.mode == "smoke":
        args.overrides += SMOKE_TOY
    seeds: list[dict[str, Any]] = []
    toy: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            seeds.append(run_seed(seed, args, args.overrides, limits, Path(tmp), toy))
    arms = {arm: [s[arm] for s in seeds] for arm in ["warmup", *args.arms]}
    most = str(max(args.distractors))
    result = {
        "data": "long_documents",
        "distractors": args.distractors,
        "most_distractors": most,
        "warmup_steps": args.warmup_steps,
        "phase_steps": [args.phase1_steps, args.phase2_steps],
        "phase_distractors": [args.short_distractors, max(args.distractors)],
        "input_tokens": list(limits),
        "toy": toy["toy"],
        "toy_warm_start": toy["toy_warm_start"],
        "arms": {arm: summarise(rs) for arm, rs in arms.items()},
        "retro_minus_plain_points": {
            "overall": difference(arms, "curriculum_retro", "curriculum", None),
            "most_distractors": difference(arms, "curriculum_retro", "curriculum", most),
        },
        "curriculum_minus_longest_points": {
            "overall": difference(arms, "curriculum", "longest", None),
            "most_distractors": difference(arms, "curriculum", "longest", most),
        },
    }
    save_result(args, result)


if __name__ == "__main__":
    main()

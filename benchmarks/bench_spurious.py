"""Spurious Rewards on the quick-start task: which rewards move held-out accuracy? (3 seeds)

The paper's ladder at CPU scale: the quick-start toy model (warm-started on a teacher
that forgets carries 75% of the time) trained by `recipe=spurious` with each reward of
§5(a): ground truth; majority and incorrect labels built from 16 samples of the model
before RL (`rlrecipes.commands.spurious_labels.label_problems`; the paper uses 64); format; and
random (gamma 0.5) with and without PPO clipping (`recipe.clip=false`). Every condition
draws from the same first 1,000 training problems and is measured on the same 300
held-out problems.

What to read from it: the paper's gains from weak rewards rest on Qwen2.5-Math's latent
code reasoning, which the toy model does not have; here the question is whether the
mechanics behave as they should (ground truth learns; labels from a model that is wrong
on 2/3 of the problems teach its mistakes; format is nearly always satisfied, so almost
every group is tied; clipping acts only when updates go off-policy).

Records (benchkit.save_result): per reward, held-out greedy accuracy after training (per seed and
statistics) and its gain over the shared starting accuracy in points, plus how many of the
training problems the labelled rewards could use.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from benchkit import parse_bench_args, save_result, stats, train_in_scratch

# Four optimizer updates per rollout (the paper's code makes 8): with one, every update is
# on-policy, the ratio is exactly 1 and clipping never acts, so clip=true and clip=false
# would be the same run. 240 updates = 60 rollouts of 8 prompts x 8 samples.
BASE = [
    "recipe=spurious",
    "data.max_examples=1000",
    "trainer.updates_per_rollout=4",
    "trainer.micro_batch_size=16",
]
CONDITIONS = {  # name -> overrides on top of BASE
    "ground_truth": ["reward=ground_truth"],
    "majority": ["reward=majority", "recipe.labels={labels}"],
    "incorrect": ["reward=incorrect", "recipe.labels={labels}"],
    "format": ["reward=format"],
    "random_clip": ["reward=random"],
    "random_no_clip": ["reward=random", "recipe.clip=false"],
}
MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 240, "label_samples": 16, "conditions": list(CONDITIONS)},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 4, "label_samples": 4},
}


def tail_mean(rows: list[dict], key: str, last: int = 10) -> float:
    values = [row[key] for row in rows if key in row][-last:]
    return sum(values) / len(values) if values else float("nan")


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch

    from rlrecipes.commands.spurious_labels import label_problems

    torch.set_num_threads(1)
    unknown = sorted(set(args.conditions) - set(CONDITIONS))
    if unknown:
        raise SystemExit(f"--conditions {unknown[0]} is unknown; valid: {', '.join(CONDITIONS)}")
    base = [*BASE, f"trainer.max_steps={args.steps}", *args.overrides]
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        labels_file = Path(tmp) / "labels.jsonl"
        labels = label_problems(base, samples=args.label_samples)
        labels_file.write_text("".join(json.dumps(r) + "\n" for r in labels))
        label_seconds = time.time() - started
        before = None
        results = {}
        for name in args.conditions:
            overrides = [*base, *(x.format(labels=labels_file) for x in CONDITIONS[name])]
            runs = []
            for seed in args.seeds:
                measure_before = before is None
                summary = train_in_scratch(
                    [*overrides, f"seed={seed}", f"trainer.eval.before={str(measure_before).lower()}"]
                )
                if measure_before:
                    before = summary["accuracy_before"]
                runs.append(summary)
            after = [r["accuracy_after"] for r in runs]
            results[name] = {
                "accuracy_after": [round(a, 4) for a in after],
                "accuracy_after_stats": stats(after),
                "gain_points": stats([100 * (a - before) for a in after], 2),
                # over the last 10 logged steps: what the reward paid, and how many groups were tied
                "train_reward_last10": [round(tail_mean(r["rows"], "reward_mean"), 3) for r in runs],
                "tied_groups_last10": [round(tail_mean(r["rows"], "frac_groups_zero_std"), 3) for r in runs],
                # share of tokens whose ratio left the clip range (0 when nothing is clipped)
                "clipped_fraction_mean": [round(tail_mean(r["rows"], "clip_ratio_region", 10**6), 4) for r in runs],
            }
    result = {
        "setting": " ".join(base) + " (trainer=cpu otherwise: lr 2e-4, 8 prompts x 8 samples)",
        "accuracy_before": before,
        "labels": {
            "samples": args.label_samples,
            "problems": len(labels),
            "majority_correct": sum(r["majority_correct"] for r in labels),
            "majority_wrong": sum(not r["majority_correct"] for r in labels),
            "seconds": round(label_seconds, 1),
        },
        "rewards": results,
    }
    if {"ground_truth", "random_clip"} <= results.keys():
        result["ground_truth_minus_random_clip_points"] = round(
            results["ground_truth"]["gain_points"]["mean"] - results["random_clip"]["gain_points"]["mean"], 2
        )
    save_result(args, result)


if __name__ == "__main__":
    sys.exit(main())

"""INTUITOR (self-certainty reward) on the toy task against GRPO with the gold reward, same budget (3 seeds).

Self-certainty rewards the completions the policy is most sure of, so it sharpens the
policy around its own mode. Whether that helps depends on whether the mode is right, so
the bench trains two warm-started toy models with `recipe=intuitor` (trainer=cpu: 120
steps, lr 2e-4, KL 0.005, no labels in the reward):

- `teacher_error_0.3`: imitates a teacher wrong on 30% of carries (its greedy answer is
  mostly right; the same model the TTRL bench uses);
- `teacher_error_0.75`: the quick-start model, whose greedy answer is usually wrong on
  carries.

and the first again at a tenth of the learning rate (2e-5; the paper's 3e-6 is for 1.5-7B
models). For each, held-out accuracy before/after, greedy (rlrecipes' metric) and sampled
(mean correctness of 16 samples at T=1.0), in points, plus the mean self-certainty of the
first and last 10 logged steps.

The same-budget control (`gold_grpo`): GRPO whose reward is the verifier's (the accuracy
reward at weight 1, the label INTUITOR does without), with INTUITOR's loss (bnpo) and KL
(0.005) and the same model, steps, learning rate and seeds, so only the reward differs. The
untrained model sampled at the same temperature is the third arm. All three report held-out
greedy accuracy and pass@1/4/8 (the unbiased estimator of Chen et al. 2021 from 8 samples per
problem at the rollout temperature, on the first `--passk-problems` held-out problems): per
seed and mean ± stdev (`pass_at_k_after`, `gold_grpo.pass_at_k_after`; `pass_at_k_before`
is the untrained model's). Records one result (benchkit.save_result).

What it showed on the development machine: on these near-deterministic toy models (token
entropy ~0.06 nats) the groups' self-certainty differs by ~0.3 nats, group normalisation
turns that into full-size advantages, and at lr 2e-4 the policy drifts until accuracy
collapses (-85 and -28 points) while mean self-certainty *falls* (11.0 -> 10.6); at 2e-5
it loses 13 points. Each update does push up the completions with above-mean
self-certainty (tests/recipes/test_intuitor.py checks the direction), but on the 0.3
model the wrong completions are the more self-certain ones (`self_certainty_advantage_
before`), so the toy shows no gain. The paper's claim (MATH-500 +6.8 points on Qwen2.5-3B) is unverified here.
"""

from __future__ import annotations

import statistics
import sys

from benchkit import (
    PASS_SAMPLES,
    parse_bench_args,
    pass_at_k_stats,
    sampled_accuracy,
    sampled_pass_at_k,
    save_result,
    starting_model,
    stats,
    train_in_scratch,
)

TEACHER_03 = ["data.synthetic.teacher_error_rate=0.3", "model.toy.sft_max_steps=1000"]
MODELS = {
    "teacher_error_0.3": TEACHER_03,
    "teacher_error_0.3_lr_2e-5": [*TEACHER_03, "trainer.learning_rate=2e-5"],
    "teacher_error_0.75": [],
}
# The same-budget control: INTUITOR's loss and KL, the verifier's reward (conf/recipe/intuitor.yaml).
GOLD_GRPO = ["recipe=grpo", "recipe.loss_type=bnpo", "recipe.beta=0.005"]
MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 120, "models": list(MODELS), "passk_problems": 300},
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 2, "models": ["teacher_error_0.3"], "passk_problems": 10},
}


def mean_of(rows: list[dict], key: str) -> float:
    values = [row[key] for row in rows if key in row]
    return round(statistics.mean(values), 4) if values else float("nan")


def certainty_of_right_and_wrong(model_path: str, cfg, problems, groups: int = 64, size: int = 8) -> dict:
    """Before training: the mean self-certainty advantage (group-normalised, as INTUITOR
    trains on it) of right and of wrong completions, over groups that hold both."""
    import torch

    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models import load_model
    from rlrecipes.rewards.certainty import policy_self_certainty

    model, tok = load_model(model_path, cfg.model)
    model.eval()
    items = problems.eval[:groups]
    groups = len(items)  # fewer where the held-out set is smaller
    prompts = [
        render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt)
        for it in items
        for _ in range(size)
    ]
    enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left")
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=cfg.trainer.max_completion_length,
            pad_token_id=tok.pad_token_id,
        )
    completions = out[:, enc.input_ids.size(1) :]
    ended = (completions == tok.eos_token_id).int().cumsum(1)
    mask = ((ended == 0) | ((ended == 1) & (completions == tok.eos_token_id))).int()  # up to the first EOS
    scores = policy_self_certainty(model, enc.input_ids, enc.attention_mask, completions, mask).view(groups, size)
    texts = tok.batch_decode(completions, skip_special_tokens=True)
    right = torch.tensor([problems.verify(t, items[i // size]["answer"]) for i, t in enumerate(texts)]).view(
        groups, size
    )
    advantages = (scores - scores.mean(1, keepdim=True)) / (scores.std(1, keepdim=True) + 1e-4)
    mixed = right.any(1) & ~right.all(1)
    return {
        "mixed_groups": int(mixed.sum()),
        "advantage_right": round(advantages[mixed][right[mixed]].mean().item(), 3),
        "advantage_wrong": round(advantages[mixed][~right[mixed]].mean().item(), 3),
    }


def measure(model_overrides: list[str], seeds: list[int], passk_problems: int) -> dict:
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set

    overrides = ["recipe=intuitor", *model_overrides]
    cfg = compose_config("train", overrides)
    problems = load_problem_set(cfg.data)
    base = starting_model(cfg, problems)
    passk_items, temperature = problems.eval[:passk_problems], cfg.trainer.temperature

    def pass_at_k(model: str) -> dict:
        return sampled_pass_at_k(model, cfg, passk_items, problems.verify, temperature)

    def after_training(run) -> dict:
        model = str(run / "model")
        return {"sampled": sampled_accuracy(model, cfg, problems), "pass_at_k": pass_at_k(model)}

    sampled_before = sampled_accuracy(base, cfg, problems)
    certainty = certainty_of_right_and_wrong(base, cfg, problems)
    runs = [train_in_scratch([*overrides, f"seed={seed}"], inspect=after_training) for seed in seeds]
    gold = [train_in_scratch([*GOLD_GRPO, *model_overrides, f"seed={seed}"], inspect=after_training) for seed in seeds]
    greedy_before = runs[0]["accuracy_before"]
    return {
        "self_certainty_advantage_before": certainty,
        "greedy_before": greedy_before,
        "sampled_before": round(sampled_before, 4),
        "pass_at_k": {"problems": len(passk_items), "samples": PASS_SAMPLES, "temperature": temperature},
        "pass_at_k_before": pass_at_k(base),
        **after_runs(runs, greedy_before, sampled_before),
        "self_certainty_first10": [mean_of(r["rows"][:10], "self_certainty/mean") for r in runs],
        "self_certainty_last10": [mean_of(r["rows"][-10:], "self_certainty/mean") for r in runs],
        "gold_grpo": {
            "setting": " ".join(GOLD_GRPO),
            "greedy_before": [round(r["accuracy_before"], 4) for r in gold],  # the same model: a check
            **after_runs(gold, greedy_before, sampled_before),
        },
    }


def after_runs(runs: list[dict], greedy_before: float, sampled_before: float) -> dict:
    """One arm's figures after training, per seed and over seeds (INTUITOR's and the control's alike)."""
    return {
        "greedy_after": [round(r["accuracy_after"], 4) for r in runs],
        "greedy_gain_points": stats([100 * (r["accuracy_after"] - greedy_before) for r in runs], 2),
        "sampled_after": [round(r["inspected"]["sampled"], 4) for r in runs],
        "sampled_gain_points": stats([100 * (r["inspected"]["sampled"] - sampled_before) for r in runs], 2),
        "pass_at_k_after": [r["inspected"]["pass_at_k"] for r in runs],
        "pass_at_k_after_stats": pass_at_k_stats([r["inspected"]["pass_at_k"] for r in runs]),
        "train_seconds": [round(r["train_seconds"], 1) for r in runs],
    }


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch

    torch.set_num_threads(1)
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        raise SystemExit(f"--models {unknown[0]} is unknown; valid: {', '.join(MODELS)}")
    steps = [f"trainer.max_steps={args.steps}"]
    results = {
        name: measure([*MODELS[name], *steps, *args.overrides], args.seeds, args.passk_problems) for name in args.models
    }
    save_result(
        args,
        {
            "setting": f"recipe=intuitor trainer=cpu ({args.steps} steps, lr 2e-4, 8 prompts x 8 samples); "
            f"control: {' '.join(GOLD_GRPO)}, same steps, lr and seeds",
            "models": results,
        },
    )


if __name__ == "__main__":
    sys.exit(main())

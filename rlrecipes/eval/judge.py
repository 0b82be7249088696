"""Judge a pair set with a model through the evaluation's generation backends.

Every pair is judged in both orders (pointwise: both responses), `samples` judgements per
row; the metrics are judge/metrics.py's. Results go to a run directory: `samples.jsonl`
(one line per judged row: its completions, parse statuses and verdicts or scores) and
`summary.json` (settings, metrics, the benchmark's headline metric).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import UserError
from rlrecipes.eval.backends import Backend, stable_seed
from rlrecipes.generation import Sampling, sample_chunks
from rlrecipes.judge.metrics import JudgedPair, judge_metrics
from rlrecipes.judge.pairs import Pair, judge_rows, split_row_id
from rlrecipes.judge.prompts import check_choice
from rlrecipes.judge.verdicts import parse
from rlrecipes.rundir import write_json, write_lines


@dataclass(frozen=True)
class JudgeSettings:
    judge: str = "pairwise"  # pairwise | pairwise_scores | pointwise
    style: str = "j1"  # j1 | rm_r1 | compact
    template: str = "chat"  # how the judge prompt becomes model input (data/templates.py)
    system_prompt: str | None = None
    samples: int = 1  # judgements per row; > 1: SC@k majority (pointwise: mean score@k)
    temperature: float = 0.0  # 0 = greedy (the paper's main results)
    top_p: float = 1.0
    max_new_tokens: int = 4096  # J1 App. C
    seed: int = 0

    def check(self) -> None:
        check_choice(self.judge, self.style, ("--judge", "--prompt"))
        if self.samples < 1:
            raise UserError(f"--samples {self.samples} must be at least 1")


def judge_texts(
    backend: Backend,
    tokenizer: Any,
    rows: Sequence[dict[str, Any]],
    settings: JudgeSettings,
    progress: Callable[[int], None] | None = None,
) -> list[list[str]]:
    """`settings.samples` judge outputs per row, generated in the backend's chunks."""
    sampling = Sampling(
        n=settings.samples,
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=settings.max_new_tokens,
    )
    prompts = [render_prompt(r["problem"], settings.template, tokenizer, settings.system_prompt) for r in rows]
    seeds = [stable_seed(settings.seed, r["id"]) for r in rows]
    out: list[list[str]] = []
    for chunk in sample_chunks(backend, prompts, seeds, sampling):
        out += [[c.text for c in completions] for completions in chunk.completions]
        if progress:
            progress(len(out))
    return out


def judged_pairs(
    pairs: Sequence[Pair], rows: Sequence[dict[str, Any]], texts: Sequence[Sequence[str]], judge: str
) -> tuple[list[JudgedPair], list[dict[str, Any]]]:
    """The parsed judgements per pair, and one record per row for samples.jsonl."""
    by_pair: dict[str, dict[str, list]] = {}
    records = []
    for row, outputs in zip(rows, texts):
        pair, kind = split_row_id(row["id"])
        judged = [parse(t, judge) for t in outputs]
        by_pair.setdefault(pair, {})[kind] = judged
        records.append(
            {
                "id": row["id"],
                "gold": row["answer"],
                "completions": list(outputs),
                "statuses": [j.status for j in judged],
                "verdicts": [j.verdict for j in judged],
                "scores": [j.score if j.score is not None else j.scores for j in judged],
            }
        )
    first, second = ("chosen", "rejected") if judge == "pointwise" else ("AB", "BA")
    result = [JudgedPair(p.id, by_pair[p.id][first], by_pair[p.id][second], p.category) for p in pairs]
    return result, records


def evaluate_judge(
    backend: Backend,
    tokenizer: Any,
    pairs: Sequence[Pair],
    settings: JudgeSettings,
    out_dir: Path,
    about: dict[str, Any],
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Judge `pairs` in both orders, write samples.jsonl and summary.json; returns the summary."""
    settings.check()
    rows = judge_rows(pairs, settings.judge, settings.style)
    started = time.time()

    def progress(done: int) -> None:
        log(f"judged {done}/{len(rows)} rows ({time.time() - started:.0f}s)")

    texts = judge_texts(backend, tokenizer, rows, settings, progress)
    judged, records = judged_pairs(pairs, rows, texts, settings.judge)
    metrics = judge_metrics(judged, settings.judge, settings.seed)
    write_lines(out_dir / "samples.jsonl", [json.dumps(r) for r in records])
    summary = {
        **about,
        "settings": asdict(settings),
        "metrics": metrics,
        "wall_seconds": round(time.time() - started, 2),
    }
    write_json(out_dir / "summary.json", summary)
    return summary

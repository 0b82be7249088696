"""Judge benchmarks by hub id, with their fields mapped onto (prompt, chosen, rejected).

The metric each paper table reports (J1 §3): accuracy over a random ordering for PPE,
RewardBench and RM-Bench; position-consistent accuracy for JudgeBench and FollowBenchEval.
Every benchmark also reports the other metrics (judge/metrics.py).

The field names follow the datasets' cards; they were written without network access to
check them, so a column that is not there fails at load time with one line listing the
columns the split has (override the mapping with the --*-field options). Any local
jsonl/json/parquet pair file works the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlrecipes.errors import UserError
from rlrecipes.judge.pairs import PairFields


@dataclass(frozen=True)
class JudgeBenchmark:
    name: str
    hub_id: str | None
    split: str
    fields: PairFields
    metric: str  # the headline metric of the J1 paper's table for this benchmark
    subset: str | None = None
    note: str = ""


JUDGE_BENCHMARKS = {
    b.name: b
    for b in (
        JudgeBenchmark(
            "rewardbench",
            "allenai/reward-bench",
            "filtered",
            PairFields("prompt", "chosen", "rejected", category="subset", id="id"),
            "accuracy",
            note="2,985 pairs; categories are the fine-grained subsets (Chat / Chat Hard / Safety / Reasoning group them)",
        ),
        JudgeBenchmark(
            "rm_bench",
            "THU-KEG/RM-Bench",
            "train",
            PairFields("prompt", "chosen", "rejected", category="domain", id="id"),
            "accuracy",
            note="chosen/rejected hold three styles each: all 9 combinations are judged (the easy/normal/hard "
            "cells of the paper's matrix)",
        ),
        JudgeBenchmark(
            "judgebench",
            "ScalerLab/JudgeBench",
            "gpt",
            PairFields("question", "response_A", "response_B", category="source", id="pair_id", label="label"),
            "consistent_accuracy",
            note="350 GPT-4o pairs; the label ('A>B' / 'B>A') names the winner",
        ),
        JudgeBenchmark(
            "ppe_preference",
            "lmarena-ai/PPE-Human-Preference-V1",
            "test",
            PairFields("prompt", "response_1", "response_2", category="language", id="question_id", label="winner"),
            "accuracy",
            note="10.2K human-preference pairs; ties are left out (counted)",
        ),
        JudgeBenchmark(
            "followbencheval",
            None,
            "test",
            PairFields(),
            "consistent_accuracy",
            note="205 pairs from EvalPlanner (Saha et al., 2025); no hub copy is known: pass the file with --pairs",
        ),
    )
}
# PPE's correctness half (12.7K best-of-K math/knowledge items with verified answers) is a set
# of K responses per prompt, not pairs: `rlrecipes judge-pairs`-style pairing (one right and
# one wrong response per prompt) turns a local copy into a pair file.


def get_benchmark(name: str) -> JudgeBenchmark:
    if name not in JUDGE_BENCHMARKS:
        raise UserError(f"--benchmark {name}: unknown; valid: {', '.join(JUDGE_BENCHMARKS)} (or --pairs FILE)")
    return JUDGE_BENCHMARKS[name]

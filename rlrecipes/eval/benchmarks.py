"""Evaluation benchmarks: a registry of specs and one loader for hub ids and local files.

Each ``BenchmarkSpec`` says where the benchmark lives on the Hugging Face Hub, which
local files hold it in the ``shared/data`` layout (``<bench>/<source repo>/<file>``),
how to read the problem / gold / id / subject / level out of a row (field names differ
per source), and how answers are written (the extraction style).

``load_benchmark(name, data_dir=None)`` returns ``BenchmarkItems`` (a list of
``BenchmarkItem``) that also carries ``source`` and ``skipped``: rows without a problem
or a usable gold answer are never dropped silently, they are listed there with the
reason, and ``report()`` prints one line about them. Exact duplicate rows (e.g. the
DAPO AIME parquet, 30 problems x 32 copies for avg@32) are merged and counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from rlrecipes.config.schema import SyntheticTaskConfig
from rlrecipes.data.files import read_rows
from rlrecipes.data.loader import read_records, to_problems
from rlrecipes.data.synthetic import make_task
from rlrecipes.errors import DataError
from rlrecipes.eval.items import (
    BenchmarkItem,
    BenchmarkItems,
    BenchmarkSpec,
    SkippedRow,
    items_from_rows,
)
from rlrecipes.eval.qa import QA_BENCHMARKS
from rlrecipes.grading.boxes import last_boxed
from rlrecipes.hub import offline_reason
from rlrecipes.storage import writing

__all__ = [
    "BENCHMARKS",
    "SUITES",
    "BenchmarkItem",
    "BenchmarkItems",
    "BenchmarkSpec",
    "SkippedRow",
    "benchmark_names",
    "expected_layout",
    "find_local_file",
    "items_from_rows",
    "load_benchmark",
    "register_benchmark",
    "resolve_benchmarks",
]


BENCHMARKS: dict[str, BenchmarkSpec] = {}
SUITES: dict[str, tuple[str, ...]] = {
    # The six benchmarks of one-shot RLVR's average (paper Tab. 8).
    "paper_suite": ("math500", "aime24", "amc23", "minerva_math", "olympiadbench", "aime25"),
    # TTRL's three (AMC here is the 83-problem set).
    "ttrl_suite": ("aime24", "amc", "math500"),
    # Search-R1's seven QA test sets (its main results table; scripts/nq_hotpotqa/data_process.sh:9).
    "search_r1_qa": tuple(spec.name for spec in QA_BENCHMARKS),
}


def register_benchmark(spec: BenchmarkSpec) -> BenchmarkSpec:
    BENCHMARKS[spec.name] = spec
    return spec


for _spec in (
    BenchmarkSpec(
        "math500",
        "HuggingFaceH4/MATH-500",
        "test",
        500,
        local_files=(
            "math500/One-Shot-RLVR/test.jsonl",
            "math500/TTRL/test.json",
            "math500/One-Shot-RLVR/math500.parquet",
        ),
        subject_fields=("subject",),
        level_fields=("level", "extra_info.level"),
        description="MATH-500 (PRM800K test subset)",
    ),
    BenchmarkSpec(
        "aime24",
        "HuggingFaceH4/aime_2024",
        "train",
        30,
        local_files=("aime24/One-Shot-RLVR/test.jsonl", "aime24/TTRL/test.json", "aime24/DAPO/aime-2024.parquet"),
        description="AIME 2024 (I and II)",
    ),
    BenchmarkSpec(
        "aime25",
        "math-ai/aime25",
        "test",
        30,
        local_files=("aime25/One-Shot-RLVR/test.jsonl", "aime25/Spurious_Rewards/test.json"),
        description="AIME 2025 (I and II)",
    ),
    BenchmarkSpec(
        "amc23",
        "math-ai/amc23",
        "test",
        40,
        local_files=("amc23/One-Shot-RLVR/test.jsonl",),
        description="AMC 2023 (12A/12B), 40 problems",
    ),
    BenchmarkSpec(
        "amc",
        "AI-MO/aimo-validation-amc",
        "train",
        83,
        local_files=("amc_ttrl/TTRL/test.json",),
        description="AMC 2022-23, the 83 problems of TTRL / Spurious Rewards",
    ),
    BenchmarkSpec(
        "minerva_math",
        "math-ai/minervamath",
        "test",
        272,
        local_files=("minerva_math/One-Shot-RLVR/test.jsonl",),
        gold_fields=("answer",),
        gold_from="solution_boxed",
        subject_fields=("type",),
        description="Minerva OCW courses",
    ),
    BenchmarkSpec(
        "olympiadbench",
        "Hothan/OlympiadBench",
        "train",
        675,
        hub_config="OE_TO_maths_en_COMP",
        local_files=("olympiadbench/One-Shot-RLVR/test.jsonl",),
        subject_fields=("subfield",),
        description="OlympiadBench, English text-only open-ended maths",
    ),
    BenchmarkSpec(
        "gsm8k",
        "openai/gsm8k",
        "test",
        1319,
        hub_config="main",
        answer_style="gsm8k",
        gold_from="gsm8k",
        local_files=("gsm8k/test.jsonl",),
        description="GSM8K grade-school maths",
    ),
    # Synthetic tasks: their template and answer style come from the `data` config.
    BenchmarkSpec(
        "arithmetic",
        "",
        "",
        None,
        synthetic=True,
        max_new_tokens=32,
        description="held-out split of the synthetic arithmetic task",
    ),
    BenchmarkSpec(
        "countdown",
        "",
        "",
        None,
        synthetic=True,
        max_new_tokens=48,
        description="held-out split of the synthetic Countdown task",
    ),
    BenchmarkSpec(
        "data",
        "",
        "",
        None,
        from_data=True,
        description="your own test set: data.path (a file, folder or hub id), data.split, "
        "data.problem_field / answer_field / id_field, data.template, data.answer_style",
    ),
    *QA_BENCHMARKS,
):
    register_benchmark(_spec)


def benchmark_names() -> list[str]:
    return sorted(BENCHMARKS)


def resolve_benchmarks(names: str | Iterable[str]) -> list[str]:
    """Expand a comma list / suite name into benchmark names, checking each one."""
    raw = names.split(",") if isinstance(names, str) else list(names)
    out: list[str] = []
    for name in (n.strip() for n in raw):
        if not name:
            continue
        for member in SUITES.get(name, (name,)):
            if member not in BENCHMARKS:
                valid = ", ".join(benchmark_names() + sorted(SUITES))
                raise DataError(f"unknown benchmark {member!r}; valid: {valid}")
            if member not in out:
                out.append(member)
    return out


# -- locating and loading ------------------------------------------------------------
def find_local_file(spec: BenchmarkSpec, data_dir: str | Path) -> Path:
    """The file holding ``spec`` under ``data_dir`` (a file path is returned as is).

    ``data_dir`` may be the shared root (``.../data``), the benchmark's folder
    (``.../data/math500``) or a source folder (``.../data/math500/TTRL``).
    """
    root = Path(data_dir).expanduser()
    if root.is_file():
        return root
    if not root.is_dir():
        raise DataError(f"data_dir {str(root)!r} does not exist; pass {expected_layout(spec)}")
    for rel in local_candidates(spec):
        parts = Path(rel).parts
        for k in range(len(parts)):
            # data_dir may sit below the layout's root, but only on this file's own path:
            # .../math500 must not serve aime24 from math500/One-Shot-RLVR/test.jsonl
            if k and root.resolve().parts[-k:] != parts[:k]:
                continue
            candidate = root.joinpath(*parts[k:])
            if candidate.is_file():
                return candidate
    other = _benchmark_folder_of(root)
    if other is not None and other not in _layout_folders(spec):
        raise DataError(
            f"data_dir {str(root)!r} is the folder of benchmark {other!r}, not of {spec.name!r}; "
            f"pass {expected_layout(spec)}"
        )
    found = sorted(p for ext in ("jsonl", "json", "parquet") for p in root.glob(f"*.{ext}"))
    if len(found) == 1:
        return found[0]
    hint = f"; files there: {', '.join(p.name for p in found)}" if found else ""
    raise DataError(f"no file for benchmark {spec.name!r} under {str(root)!r}{hint}; pass {expected_layout(spec)}")


def _layout_folders(spec: BenchmarkSpec) -> set[str]:
    return {Path(rel).parts[0] for rel in local_candidates(spec)}


def saved_file(spec: BenchmarkSpec) -> str:
    """Where `save_benchmark` writes `spec` under its folder (relative, as `local_files` are)."""
    return f"{spec.name}/hub/{spec.split}.jsonl"


def local_candidates(spec: BenchmarkSpec) -> tuple[str, ...]:
    """The files `data_dir` is searched for, preferred first: the papers' copies, then a saved one."""
    return (*spec.local_files, saved_file(spec))


SAVE_COMMAND = "rlrecipes save-benchmark NAME DIR"


def save_benchmark(name: str, root: str | Path) -> tuple[Path, int]:
    """Write benchmark `name`, as the hub serves it, to `root`/NAME/hub/SPLIT.jsonl, where
    `data_dir=root` finds it on a machine without network; returns (file, rows). An existing
    file is never overwritten."""
    if name not in BENCHMARKS:
        raise DataError(f"unknown benchmark {name!r}; valid: {', '.join(benchmark_names())}")
    spec = BENCHMARKS[name]
    if spec.synthetic or spec.from_data:
        raise DataError(f"benchmark {name!r} has no hub copy to save: {spec.description}")
    target = Path(root).expanduser() / saved_file(spec)
    if target.exists():
        raise DataError(
            f"{target} exists; move it away or save to another DIR (a saved benchmark is never overwritten)"
        )
    rows = [dict(row) for row in _load_hub(spec)]
    items_from_rows(spec, rows, f"hub:{spec.hub_id}")  # readable as it will be read offline, or one line now
    with writing(target.parent, "choose a writable DIR"):
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        tmp.replace(target)
    return target, len(rows)


def _benchmark_folder_of(path: Path) -> str | None:
    """The shared-data benchmark folder (``math500``, ``aime24`` ...) that ``path`` lies in, if any."""
    folders = set().union(*(_layout_folders(spec) for spec in BENCHMARKS.values()))
    return next((part for part in reversed(path.resolve().parts) if part in folders), None)


def expected_layout(spec: BenchmarkSpec) -> str:
    """What `data_dir` must hold for `spec`: the file names the shared layout uses and the
    fields a row needs (the first present is read)."""
    files = " or ".join(f"DIR/{rel}" for rel in local_candidates(spec))
    gold = "|".join(spec.gold_fields)
    if spec.gold_from == "gsm8k":
        gold += " (a solution ending '#### 42' works)"
    elif spec.gold_from == "solution_boxed":
        gold += ", else the last \\boxed{} of 'solution'"
    return (
        f"data_dir=DIR with {files}, or data_dir=FILE (.jsonl/.json/.parquet); each row needs the problem in "
        f"{'|'.join(spec.problem_fields)} and the answer in {gold}"
    )


def _load_hub(spec: BenchmarkSpec) -> Iterable[dict[str, Any]]:
    offline = offline_reason()  # no network: the cache only, no retries
    try:
        from datasets import load_dataset

        return load_dataset(spec.hub_id, spec.hub_config, split=spec.split)
    except Exception as exc:  # offline, gated, renamed: one clear line instead
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        why = f"not in the local cache and the hub cannot be reached ({offline})" if offline else first
        raise DataError(
            f"could not load benchmark {spec.name!r} from the hub ({spec.hub_id}, "
            f"split {spec.split}): {why}; on a machine with network, "
            f"`{SAVE_COMMAND.replace('NAME', spec.name)}` saves it, then pass data_dir=DIR here "
            f"(or {expected_layout(spec)})"
        ) from None


def _synthetic(name: str, synthetic_cfg: Any) -> BenchmarkItems:
    from omegaconf import OmegaConf

    base = OmegaConf.structured(SyntheticTaskConfig) if synthetic_cfg is None else synthetic_cfg
    task = make_task(OmegaConf.merge(base, {"task": name}))
    items = [
        BenchmarkItem(id=str(it["id"]), problem=it["problem"], gold=str(it["answer"]), meta={"row": i})
        for i, it in enumerate(task.eval)
    ]
    return BenchmarkItems(items, name=name, source=f"synthetic {name} task (held-out split)", verify=task.verify)


def _from_data(data: Any) -> BenchmarkItems:
    """Your own test set through the training data's field mapping (``rlrecipes.data``)."""

    if data is None or not data.path:  # a local file or a hub id, whatever data.source says
        raise DataError(
            "benchmark=data evaluates your own test set: set data.path=FILE_OR_HUB_ID "
            "(and data.problem_field, data.answer_field, data.split as needed)"
        )
    if not data.answer_field:
        raise DataError("benchmark=data needs gold answers: data.answer_field is null")
    rows, source = read_records(data.path, data.subset, data.split)
    loaded = to_problems(rows, source, data.problem_field, data.answer_field, data.id_field)
    items = []
    for row in loaded.items:
        gold = row["answer"]
        if "\\boxed" in gold or "\\fbox" in gold:  # a worked solution: its final box is the answer
            gold = last_boxed(gold) or gold
        items.append(BenchmarkItem(id=row["id"], problem=row["problem"], gold=gold, meta={"row": len(items)}))
    if len({it.id for it in items}) != len(items):  # ids key resumable samples
        items = [BenchmarkItem(f"data-{i}", it.problem, it.gold, meta=it.meta) for i, it in enumerate(items)]
    return BenchmarkItems(items, name="data", source=source, skipped=[SkippedRow(i, why) for i, why in loaded.skipped])


def load_benchmark(
    name: str, data_dir: str | Path | None = None, limit: int | None = None, synthetic: Any = None, data: Any = None
) -> BenchmarkItems:
    """Load benchmark ``name`` from ``data_dir`` (a directory or a file) or the hub.

    ``limit`` keeps the first ``limit`` problems (after skipping and merging).
    Synthetic tasks are built from ``synthetic`` (a ``SyntheticTaskConfig``; the
    ``data.synthetic`` node of the run), whose ``task`` is set to ``name``; the ``data``
    benchmark reads ``data`` (the run's data config: path, split, field mapping).
    """
    if name not in BENCHMARKS:
        valid = ", ".join(benchmark_names())
        raise DataError(f"unknown benchmark {name!r}; valid: {valid}")
    spec = BENCHMARKS[name]
    if spec.from_data:
        items = _from_data(data)
    elif spec.synthetic:
        items = _synthetic(name, synthetic)
    elif data_dir is not None:
        path = find_local_file(spec, data_dir)
        items = items_from_rows(spec, read_rows(path), str(path))
    else:
        items = items_from_rows(spec, _load_hub(spec), f"hub:{spec.hub_id}")
    return items.head(limit)

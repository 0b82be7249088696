"""One entry point for training data: problems, held-out problems, and their verifier."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rlrecipes.choice import Choice
from rlrecipes.data.loader import LoadedProblems, read_records, to_problems
from rlrecipes.data.synthetic import SyntheticTaskName, make_task
from rlrecipes.data.task import SyntheticTask
from rlrecipes.errors import UserError
from rlrecipes.grading import grade


@dataclass
class ProblemSet:
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    verify: Callable[[str, Any], bool]
    task: SyntheticTask | None  # set for synthetic data (the toy model warm-starts on it)
    report: str
    # the style `verify` reads a completion's answer in (grading.extract), None where the set has a
    # verifier of its own; the pre-flight judges whether answers are readable only when it is known
    answer_style: str | None = None


class DataSource(Choice):  # `data.source`: where `load_problem_set` reads the problems
    synthetic = "synthetic"  # the in-process tasks (data.synthetic)
    hub = "hub"  # a Hugging Face dataset id
    file = "file"  # a local .jsonl/.json/.parquet file or folder


def load_problem_set(data_cfg: Any, aliases: bool = False) -> ProblemSet:
    """The `data` config's problems; `aliases`: its answer field lists aliases, any of which is
    right (QA), kept as a JSON list (`loader.gold_aliases`)."""
    if data_cfg.source == "synthetic":
        task = make_task(data_cfg.synthetic)
        train = task.train[: data_cfg.max_examples] if data_cfg.max_examples else task.train
        held_out = task.eval[: data_cfg.max_eval_examples] if data_cfg.max_eval_examples else task.eval
        report = f"{len(train)} train / {len(held_out)} held-out {task.name} problems (disjoint)"
        if not data_cfg.answer_field:  # train as on unlabelled questions; held-out keeps its answers
            train = [{**item, "answer": None} for item in train]
            report += "; training answers withheld (data.answer_field=null)"
        return ProblemSet(
            train, held_out, task.verify, task, report, "answer_line" if task.answer_line_graded else None
        )
    if data_cfg.source not in DataSource.values():
        raise UserError(f"data.source={data_cfg.source!r}; valid: {DataSource.valid()}")
    if not data_cfg.path:
        raise UserError(f"data.source={data_cfg.source} needs data.path (a hub id or a local file)")
    if not data_cfg.answer_field and data_cfg.eval_path:
        raise UserError(
            f"data.eval_path={data_cfg.eval_path} needs gold answers to measure held-out accuracy, "
            "but data.answer_field=null (unlabelled data); set data.answer_field or drop data.eval_path"
        )
    train = _load(data_cfg, data_cfg.path, data_cfg.split, data_cfg.max_examples, aliases)
    held_out = (
        _load(data_cfg, data_cfg.eval_path, data_cfg.eval_split, data_cfg.max_eval_examples, aliases)
        if data_cfg.eval_path
        else LoadedProblems([], "none")
    )
    report = f"train: {train.report()}; held-out: {held_out.report()}"
    style = str(data_cfg.answer_style)
    return ProblemSet(train.items, held_out.items, answer_verifier(style), None, report, style)


def _load(data_cfg: Any, path: str, split: str, limit: int | None, aliases: bool = False) -> LoadedProblems:
    rows, source = read_records(path, data_cfg.subset, split)
    return to_problems(
        rows,
        source,
        data_cfg.problem_field,
        data_cfg.answer_field,
        data_cfg.id_field,
        dedup=data_cfg.dedup,
        limit=limit,
        aliases=aliases,
    )


def data_label(data_cfg: Any) -> str:
    """The training data's name for run names and summaries: the data group's name, or the
    file / hub id when a synthetic group (the default) was pointed at other data."""
    if data_cfg.source != "synthetic" and data_cfg.path and data_cfg.name in SyntheticTaskName.values():
        return Path(str(data_cfg.path)).stem or str(data_cfg.path)
    return str(data_cfg.name)


def answer_verifier(style: str) -> Callable[[str, Any], bool]:
    """Verifier for math datasets: extract the final answer in `style`, then grade it."""

    def verify(completion: str, gold: Any) -> bool:

        return grade(completion, str(gold), style=style)

    return verify

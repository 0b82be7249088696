"""A curriculum phase's data (QwenLong-L1, see `rlrecipes.training.curriculum`), written by
`rlrecipes stages` just before the phase starts, into PARENT/<i>-<name>-data/:

- train.jsonl: the phase's own problems within its input-length limit, then the hard examples
  of earlier phases, each repeated by its weight (rows `{id, problem, answer}`);
- heldout.jsonl: the held-out problems, unfiltered (accuracy before/after stays comparable
  across phases);
- phase.json: the counts and every carried example's phase, mean reward, difficulty, copies.

The phase's `rlrecipes train` reads these files (`phase_overrides`) and records
accuracy_history.json, the difficulty record the next phases read. phase.json is written last:
a folder with it is complete and is kept as it is when the pipeline resumes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from rlrecipes.data.problems import load_problem_set
from rlrecipes.data.synthetic import ANSWER_LINE_TASKS
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import ConfigError, UserError
from rlrecipes.models import lora
from rlrecipes.rundir import write_json, write_lines
from rlrecipes.training.curriculum import carried_rows, filter_by_length, retrospective_selection

Log = Callable[[str], None]


def data_dir(stage: Any, parent: Path) -> Path:
    return parent / f"{stage.index}-{stage.name}-data"


def phase_overrides(stage: Any, parent: Path) -> list[str]:
    """What makes the phase's `rlrecipes train` read its prepared data and keep the history.
    Every data setting the files already applied (limits, dedup, fields) is reset."""
    folder = data_dir(stage, parent)
    return [
        "trainer.record_accuracy_history=true",
        "data.source=file",
        f"data.path={folder / 'train.jsonl'}",
        f"data.eval_path={folder / 'heldout.jsonl'}",
        "data.subset=null",
        "data.split=train",
        "data.eval_split=test",
        "data.problem_field=problem",
        "data.answer_field=answer",
        "data.id_field=id",
        "data.dedup=false",
        "data.max_examples=null",
        "data.max_eval_examples=null",
    ]


def prepare(stage: Any, parent: Path, stages: Sequence[Any], cfg: Any, log: Log) -> dict[str, Any]:
    """Write the phase's data from `cfg` (its composed train config, on its own data and the
    model it starts from); returns phase.json's content."""
    folder = data_dir(stage, parent)
    if (folder / "phase.json").is_file():
        log(f"stage {stage.name}: phase data prepared already: kept ({folder})")
        return json.loads((folder / "phase.json").read_text())

    if not cfg.data.answer_field:
        raise ConfigError(f"stage {stage.name}: a phase needs gold answers (data.answer_field is null)")
    problems = load_problem_set(cfg.data)
    if problems.task is not None and not problems.task.answer_line_graded:
        raise ConfigError(
            f"stage {stage.name}: data={problems.task.name} is checked by its own verifier, not by an "
            f"answer match; a phase takes a synthetic task graded by its answer line "
            f"({', '.join(ANSWER_LINE_TASKS)}) or a hub/file dataset"
        )
    tokens = prompt_tokens(cfg, stage.name)
    limit = stage.phase.max_input_tokens
    own = filter_by_length(problems.train, limit, tokens)
    if not own.kept:
        raise ConfigError(
            f"stage {stage.name}: phase.max_input_tokens={limit} leaves no training examples "
            f"(the shortest of {len(problems.train)} prompts has {own.shortest} tokens)"
        )
    log(f"stage {stage.name}: input-length limit: {own.report(len(problems.train))}")
    carried, extra, carried_left_out = _retrospective(stage, parent, stages, tokens, limit, log)
    rows = [_row(item) for item in own.kept] + extra
    folder.mkdir(parents=True, exist_ok=True)
    write_lines(folder / "train.jsonl", [json.dumps(r) for r in rows])
    write_lines(folder / "heldout.jsonl", [json.dumps(_row(item)) for item in problems.eval])
    record = {
        "max_input_tokens": limit,
        "problems": len(problems.train),
        "kept": len(own.kept),
        "left_out_by_length": own.left_out,
        "carried_examples": len(carried),
        "carried_rows": len(extra),
        "carried_left_out_by_length": carried_left_out,
        "train_rows": len(rows),
        "heldout": len(problems.eval),
        "carried": [vars(c) for c in carried],
    }
    write_json(folder / "phase.json", record)
    return record


def _row(item: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(item["id"]), "problem": item["problem"], "answer": item["answer"]}


def _retrospective(
    stage: Any, parent: Path, stages: Sequence[Any], tokens: Callable[[str], int], limit: Any, log: Log
) -> tuple[list[Any], list[dict[str, Any]], int]:
    settings = stage.phase.retrospective
    if not settings.enabled:
        return [], [], 0
    sources = [s for s in stages if s.index < stage.index and s.phase is not None]
    if settings.phases:
        sources = [s for s in sources if s.name in settings.phases]
    histories, rows_by_id = [], {}
    for source in sources:
        path = source.run_dir(parent) / "accuracy_history.json"
        if not path.is_file():
            raise UserError(f"stage {stage.name}: {path} is missing; phase {source.name} recorded no difficulty")
        histories.append((source.name, json.loads(path.read_text())))
        for line in (data_dir(source, parent) / "train.jsonl").read_text().splitlines():
            row = json.loads(line)
            rows_by_id.setdefault(row["id"], row)
    carried = retrospective_selection(
        histories, settings.hard_below, settings.reward_floor, settings.max_copies, settings.max_examples
    )
    fitting = filter_by_length(carried_rows(carried, rows_by_id), limit, tokens)
    names = ", ".join(s.name for s in sources) or "none"
    log(
        f"stage {stage.name}: retrospective sampling: {len(carried)} hard examples of {names} "
        f"(mean reward < {settings.hard_below}) carried as {len(fitting.kept)} rows weighted by 1/mean reward"
        + (f" ({fitting.left_out} rows over the length limit left out)" if fitting.left_out else "")
    )
    return carried, fitting.kept, fitting.left_out


def prompt_tokens(cfg: Any, stage_name: str) -> Callable[[str], int]:
    """Counts a problem's tokens as the policy sees it: rendered with the data template by the
    tokenizer of the model the phase starts from (loaded alone, without its weights)."""

    path = cfg.model.name_or_path
    if not path:
        raise ConfigError(
            f"stage {stage_name}: a phase counts tokens with its model's tokenizer; give it a model folder "
            "(model_from: an earlier stage, e.g. a warm-up sft) or model.name_or_path"
        )
    tokenizer = load_tokenizer(str(path), cfg.model)

    def count(problem: str) -> int:
        text = render_prompt(problem, cfg.data.template, tokenizer, cfg.data.system_prompt)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def load_tokenizer(name_or_path: str, model_cfg: Any) -> Any:
    from transformers import AutoTokenizer

    source = name_or_path
    if (
        lora.is_adapter_folder(name_or_path)
        and not (Path(name_or_path).expanduser() / "tokenizer_config.json").is_file()
    ):
        source = lora.adapter_base(name_or_path)  # an adapter saved without its tokenizer
    try:
        return AutoTokenizer.from_pretrained(
            source, trust_remote_code=bool(model_cfg.trust_remote_code), revision=model_cfg.revision
        )
    except OSError as exc:
        raise UserError(f"cannot load the tokenizer of {name_or_path!r}: {str(exc).splitlines()[0]}") from None

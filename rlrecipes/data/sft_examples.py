"""Supervised fine-tuning data: (prompt, completion) examples and their token ids.

Two steps, so that a data mistake fails before any model loads:

- `load_sft_data(data_cfg)` reads the examples with no tokenizer: the synthetic task's
  problems with their correct solutions, or rows of a jsonl/json/parquet file or hub
  dataset mapped by `data.problem_field` + `data.completion_field` (prompt-completion
  format) or by `data.messages_field` (chat format: the last message is the assistant's
  completion, the ones before it the prompt). A field no row has is one line naming the
  key and the columns there are; a row without it is left out and counted in the report.
- `tokenize_examples(examples, ...)` renders each prompt exactly as `rlrecipes train`
  renders RL prompts (`data.template`, `data.system_prompt`; `rlrecipes.data.templates`)
  and tokenizes prompt and completion separately, as generation sees them (the prompt
  alone, then the sampled tokens), with the EOS that ends the completion. Rows longer
  than the length limit are left out and counted, never truncated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable

from rlrecipes.choice import Choice
from rlrecipes.data.loader import get_field, gold_text, read_records
from rlrecipes.data.priming import trace
from rlrecipes.data.synthetic import make_task
from rlrecipes.data.task import SyntheticTask
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import ConfigError, DataError

Verify = Callable[[str, Any], bool]


@dataclass
class SFTData:
    train: list[dict[str, Any]]  # {"id", "prompt": str | list of messages, "completion": str, "answer"}
    eval: list[dict[str, Any]]
    report: str
    task: SyntheticTask | None = None  # synthetic data: the toy model warm-starts on it
    verify: Verify | None = None  # synthetic data: the task's checker (held-out accuracy)


@dataclass
class TokenizedExamples:
    rows: list[dict[str, Any]]  # {"input_ids", "completion_mask"}: prompt ids + completion ids + EOS
    too_long: list[str] = field(default_factory=list)  # ids of the rows left out

    def report(self, limit_key: str, limit: int) -> str:
        if not self.too_long:
            return ""
        shown = ", ".join(self.too_long[:5]) + (f" and {len(self.too_long) - 5} more" if len(self.too_long) > 5 else "")
        return f"{len(self.too_long)} rows longer than {limit_key}={limit} tokens left out: {shown}"


class SFTTraces(Choice):  # `sft.traces`: the completions of synthetic data (see `load_sft_data`)
    solution = "solution"  # the task's correct answer line
    search = "search"  # Countdown: a search trace showing four behaviours, ending correct (data/priming.py)
    search_wrong = "search_wrong"  # the same search ending in a wrong answer


def check_sft_fields(data_cfg: Any, traces: str = "solution") -> None:
    """The field mapping a source needs, checked without reading it."""
    if traces != "solution" and (data_cfg.source != "synthetic" or data_cfg.synthetic.task != "countdown"):
        raise ConfigError(
            f"sft.traces={traces} writes toy Countdown traces: use data=countdown (or sft.traces=solution)"
        )
    if data_cfg.source == "synthetic":
        if data_cfg.completion_field or data_cfg.messages_field:
            raise ConfigError(
                "data.completion_field / data.messages_field read files; synthetic data trains on the task's "
                "own solutions (set data.source=file|hub and data.path to use them)"
            )
        return
    if data_cfg.messages_field and data_cfg.completion_field:
        raise ConfigError(
            f"data.messages_field={data_cfg.messages_field!r} and data.completion_field="
            f"{data_cfg.completion_field!r}: choose one format (chat messages, or problem + completion)"
        )
    if not data_cfg.messages_field and not data_cfg.completion_field:
        raise ConfigError(
            "SFT data needs its target text: data.completion_field=COLUMN (with data.problem_field for the "
            "prompt) or data.messages_field=COLUMN (chat messages ending with the assistant's turn)"
        )


def load_sft_data(data_cfg: Any, traces: str = "solution") -> SFTData:
    """The training and held-out examples of `data_cfg` (no tokenizer needed); `traces`: the
    completions of synthetic data (`sft.traces`)."""
    check_sft_fields(data_cfg, traces)
    if data_cfg.source == "synthetic":
        return _synthetic(data_cfg, traces)
    if data_cfg.source not in ("hub", "file"):
        raise ConfigError(f"data.source={data_cfg.source!r}; valid: synthetic, hub, file")
    if not data_cfg.path:
        raise ConfigError(f"data.source={data_cfg.source} needs data.path (a hub id or a local file)")
    train, train_report = _read(data_cfg, data_cfg.path, data_cfg.split, data_cfg.max_examples)
    held_out, eval_report = [], "none"
    if data_cfg.eval_path:
        held_out, eval_report = _read(data_cfg, data_cfg.eval_path, data_cfg.eval_split, data_cfg.max_eval_examples)
    return SFTData(train, held_out, f"train: {train_report}; held-out: {eval_report}")


def _synthetic(data_cfg: Any, traces: str) -> SFTData:
    task = make_task(data_cfg.synthetic)
    rng = random.Random(data_cfg.synthetic.seed)  # the same traces for the same task

    def example(item: dict[str, Any]) -> dict[str, Any]:
        completion = task.solution(item) if traces == "solution" else trace(item, traces, rng)
        return {"id": item["id"], "prompt": item["problem"], "completion": completion, "answer": item["answer"]}

    train = [example(it) for it in task.train[: data_cfg.max_examples or None]]
    held_out = [example(it) for it in task.eval[: data_cfg.max_eval_examples or None]]
    what = "their correct solutions" if traces == "solution" else f"{traces} traces"
    report = f"{len(train)} train / {len(held_out)} held-out {task.name} problems with {what}"
    return SFTData(train, held_out, report, task, task.verify)


def _read(data_cfg: Any, path: str, split: str, limit: int | None) -> tuple[list[dict[str, Any]], str]:
    rows, source = read_records(path, data_cfg.subset, split)
    if data_cfg.messages_field:
        fields = [("data.messages_field", data_cfg.messages_field)]
    else:
        fields = [("data.problem_field", data_cfg.problem_field), ("data.completion_field", data_cfg.completion_field)]
    for key, name in fields:
        if rows and all(get_field(row, name) is None for row in rows):
            columns = ", ".join(sorted(map(str, rows[0].keys())))
            raise DataError(f"{key}={name!r}: no row of {source} has it; its columns are: {columns}")
    examples: list[dict[str, Any]] = []
    skipped: list[tuple[int, str]] = []
    for index, row in enumerate(rows):
        ident = get_field(row, data_cfg.id_field) if data_cfg.id_field else None
        answer = gold_text(get_field(row, data_cfg.answer_field)) if data_cfg.answer_field else None
        if data_cfg.messages_field:
            parsed = _split_messages(row.get(data_cfg.messages_field), data_cfg.messages_field)
        else:
            parsed = _prompt_completion(row, data_cfg.problem_field, data_cfg.completion_field)
        if isinstance(parsed, str):
            skipped.append((index, parsed))
            continue
        prompt, completion = parsed
        examples.append(
            {
                "id": str(ident if ident is not None else index),
                "prompt": prompt,
                "completion": completion,
                "answer": answer,
            }
        )
        if limit is not None and len(examples) >= limit:
            break
    report = f"{len(examples)} examples from {source}"
    if skipped:
        shown = ", ".join(f"row {i} ({why})" for i, why in skipped[:5])
        report += f"; {len(skipped)} rows left out: {shown}{' ...' if len(skipped) > 5 else ''}"
    if not examples:
        raise DataError(f"{source}: no usable example ({report})")
    return examples, report


def _prompt_completion(
    row: dict[str, Any], problem_field: str, completion_field: str
) -> tuple[str | list[dict[str, str]], str] | str:
    """(prompt, completion) of a row, or why it is left out. A prompt column of chat messages
    (OpenRLHF's `input_key` with `apply_chat_template`) is the prompt whole, system turn
    included, rendered by the chat template; a text column goes through `data.template`."""
    prompt, completion = _value(row, problem_field), _value(row, completion_field)
    if isinstance(prompt, list) and prompt:
        if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and "role" in m for m in prompt):
            return f"{problem_field} is not a list of {{role, content}} messages"
        prompt = [{"role": str(m["role"]), "content": m["content"]} for m in prompt]
    elif not isinstance(prompt, str) or not prompt.strip():
        return f"no {problem_field}"
    if not isinstance(completion, str) or not completion.strip():
        return f"no {completion_field}"
    return prompt, completion


def _value(row: dict[str, Any], name: str) -> Any:
    """A field's value (dotted names reach into nested records); None when missing."""
    value: Any = row
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _split_messages(messages: Any, name: str) -> tuple[list[dict[str, str]], str] | str:
    """(prompt messages, the final assistant message's text) of a chat, or why it is left out."""
    if not isinstance(messages, list) or not messages:
        return f"no {name}"
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) and "role" in m for m in messages):
        return f"{name} is not a list of {{role, content}} messages"
    if messages[-1]["role"] != "assistant" or len(messages) < 2:
        return f"{name} does not end with an assistant message after the prompt"
    prompt = [{"role": str(m["role"]), "content": m["content"]} for m in messages[:-1]]
    return prompt, messages[-1]["content"]


def render_sft_prompt(prompt: str | list[dict[str, str]], data_cfg: Any, tokenizer: Any) -> str:
    """The prompt text as `rlrecipes train` shows it to the policy: a problem through
    `data.template`; chat messages through the tokenizer's chat template (with
    `data.system_prompt` first when the chat has no system message of its own)."""
    if isinstance(prompt, str):
        return render_prompt(prompt, data_cfg.template, tokenizer, data_cfg.system_prompt)
    messages = list(prompt)
    if data_cfg.system_prompt and messages[0]["role"] != "system":
        messages.insert(0, {"role": "system", "content": data_cfg.system_prompt})
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError("data.messages_field needs a tokenizer with a chat template; this model has none")
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def tokenize_examples(
    examples: list[dict[str, Any]], data_cfg: Any, tokenizer: Any, max_length: int
) -> TokenizedExamples:
    """`input_ids` = prompt ids + completion ids + EOS and `completion_mask` (1 on the
    completion and its EOS), each part tokenized on its own without special tokens: the
    rendered prompt already holds what the template adds, and RL generation starts from
    the prompt's own ids."""
    out = TokenizedExamples([])
    for example in examples:
        prompt = tokenizer(render_sft_prompt(example["prompt"], data_cfg, tokenizer), add_special_tokens=False)
        completion = tokenizer(example["completion"], add_special_tokens=False)
        prompt_ids = list(prompt["input_ids"])
        completion_ids = list(completion["input_ids"])
        if not completion_ids or completion_ids[-1] != tokenizer.eos_token_id:  # a completion may end with it already
            completion_ids.append(tokenizer.eos_token_id)
        if len(prompt_ids) + len(completion_ids) > max_length:
            out.too_long.append(example["id"])
            continue
        out.rows.append(
            {
                "input_ids": prompt_ids + completion_ids,
                "completion_mask": [0] * len(prompt_ids) + [1] * len(completion_ids),
            }
        )
    return out

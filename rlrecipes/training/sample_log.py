"""`trainer.log_samples_every=N`: a step's rollouts as text in `RUN/samples/step_N.jsonl`
(format: `rlrecipes.step_samples`), so a run can be read back — `rlrecipes show RUN --step N`
— and `rlrecipes doctor` can quote what went wrong (a cut completion, a tool's error).

Written from the scored batch (an engine hook placed after every other hook, so the
advantages are the ones the update uses) on the main process, for its own share of the
rollouts: gathering every process's text would cost a collective call for a log.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlrecipes.engine.hooks import EngineHook
from rlrecipes.step_samples import write_step

# Whole groups are kept up to this many completions a step: enough to see a group's spread,
# small enough that long-context runs (thousands of tokens a completion) keep small files.
MAX_COMPLETIONS = 64


class SampleLog(EngineHook):
    """Writes steps 1, N, 2N, ... (a rollout serving several optimizer steps: the first rollout at
    or after each multiple of N). With dynamic sampling a step's first scored round is written."""

    def __init__(self, run_dir: Path, every: int):
        self.run_dir = run_dir
        self.every = every
        self._last_block = -1  # the block of `every` steps last written (step // every)

    def after_scoring(self, trainer: Any, batch: dict[str, Any], rewards: Any) -> dict[str, Any]:
        step = trainer.state.global_step + 1  # these rollouts feed the next optimizer step
        if not trainer.model.training or step // self.every <= self._last_block:
            return batch
        self._last_block = step // self.every
        if trainer.accelerator.is_main_process:
            write_step(self.run_dir, step, sample_rows(trainer, batch, rewards, step))
        return batch


def sample_rows(trainer: Any, batch: dict[str, Any], rewards: Any, step: int) -> list[dict[str, Any]]:
    """One row per completion of this process's batch (whole groups, at most MAX_COMPLETIONS)."""
    tokenizer = getattr(trainer, "_tokenizer", None) or trainer.processing_class
    size = int(batch["completion_ids"].size(0))
    group = int(trainer.num_generations)
    keep = min(size, max(group, MAX_COMPLETIONS // group * group))
    # TRL scores the gathered batch; this process's rows are its slice of it (TRL's process_slice)
    start = trainer.accelerator.process_index * size
    names = list(trainer.reward_func_names)
    inputs = trainer.last_inputs or [{}] * size
    ends = set(getattr(trainer, "eos_token_ids", None) or [tokenizer.eos_token_id]) | {tokenizer.pad_token_id}
    rows = []
    for i in range(keep):
        ids, length, truncated = _completion(batch, i, ends, tokenizer.pad_token_id)
        prompt = batch["prompt_ids"][i][batch["prompt_mask"][i].bool()].tolist()
        row: dict[str, Any] = {
            "step": step,
            "group": i // group,
            "prompt": tokenizer.decode(prompt, skip_special_tokens=True),
            "completion": tokenizer.decode(ids, skip_special_tokens=True),
            "answer": None if inputs[i].get("answer") is None else str(inputs[i]["answer"]),
            "rewards": _rewards(rewards, start + i, names),
            "advantage": _advantage(batch, i, length),
            "length": length,
            "truncated": truncated,
        }
        if "tool_mask" in batch:
            row["turns"] = _turns(ids, batch["tool_mask"][i][:length].tolist(), tokenizer)
        rows.append(row)
    return rows


def _completion(batch: dict[str, Any], i: int, ends: set[int], pad: int) -> tuple[list[int], int, bool]:
    """The completion's tokens, its length, and whether it was cut (its last token no EOS).

    `mask_truncated_completions` zeroes a cut completion's mask: its length is then up to its
    last non-pad token (a cut completion ends in no EOS, so trailing pads are padding)."""
    ids = batch["completion_ids"][i].tolist()
    length = int(batch["completion_mask"][i].sum())
    if length == 0:
        length = max((k + 1 for k, t in enumerate(ids) if t != pad), default=0)
    ids = ids[:length]
    return ids, length, bool(ids) and ids[-1] not in ends


def _rewards(rewards: Any, row: int, names: list[str]) -> dict[str, float | None]:
    if rewards is None or row >= rewards.size(0):
        return {}
    values = rewards[row].tolist()
    return {name: (None if value != value else float(value)) for name, value in zip(names, values)}  # NaN: n/a


def _advantage(batch: dict[str, Any], i: int, length: int) -> float:
    value = batch["advantages"][i]
    if value.dim() == 0:
        return float(value)
    return float(value[: max(length, 1)].float().mean())  # per-token advantages (GAE): their mean


def _turns(ids: list[int], mask: list[int], tokenizer: Any) -> list[dict[str, str]]:
    """Consecutive tokens with one author (tool_mask: 1 the model's, 0 a tool's) as one turn;
    a turn of special tokens only (the EOS after an answer) shows no text and is left out."""
    turns: list[dict[str, str]] = []
    start = 0
    for k in range(1, len(ids) + 1):
        if k == len(ids) or mask[k] != mask[start]:
            text = tokenizer.decode(ids[start:k], skip_special_tokens=True)
            if text:
                turns.append({"by": "model" if mask[start] else "tool", "text": text})
            start = k
    return turns

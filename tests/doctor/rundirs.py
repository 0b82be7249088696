"""Run directories written by hand for the doctor's tests: a healthy 10-step run whose metrics
each test bends into one failure, with the values that cross a threshold computed by hand."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

STEPS = 10  # the start and end windows are then two steps each (a fifth, rounded down)

CONFIG: dict[str, Any] = {
    "recipe": {
        "name": "grpo",
        "loss_type": "grpo",
        "beta": 0.0,
        "epsilon_high": None,
        "entropy_coef": 0.0,
        "adaptive_entropy": {"enabled": False},
        "dynamic_sampling": {"enabled": False},
        "rewards": [{"name": "accuracy", "weight": 1.0, "options": {}}],
    },
    "model": {"name": "toy"},
    "data": {"name": "arithmetic"},
    "trainer": {
        "learning_rate": 0.0002,
        "max_completion_length": 16,
        "num_generations": 8,
        "max_grad_norm": 1.0,
        "max_steps": STEPS,
    },
    "rollout": {"backend": "hf", "tools": [], "tool_timeout_s": 10.0, "importance_sampling": {"enabled": False}},
    "seed": 0,
    "run_dir": "/runs/r",
}
OVERRIDES = ["recipe=grpo", f"trainer.max_steps={STEPS}", "run_dir=/runs/r"]


def healthy(step: int) -> dict[str, Any]:
    """A learning run's step: reward and accuracy rise 0.02 a step, every other metric calm."""
    rising = round(0.3 + 0.02 * step, 4)
    return {
        "step": step,
        "loss": 0.01,
        "grad_norm": 0.5,
        "reward_mean": rising,
        "reward_std": 0.4,
        "accuracy": rising,
        "rewards/accuracy/mean": rising,
        "frac_groups_zero_std": 0.25,
        "entropy": 0.6,
        "kl": None,
        "clip_ratio_region": 0.0,
        "completion_length_mean": 12.0,
        "truncated_fraction": 0.05,
        "learning_rate": 0.0002,  # CONFIG's, constant
        "policy_shift": 0.001,  # at 2e-4 a step: 0.001 nats a token, far below 0.03
    }


def rows(changes: dict[str, Any] | None = None, steps: int = STEPS, drop: tuple[str, ...] = ()) -> list[dict]:
    """`steps` healthy rows with `changes`: metric -> one value for every step, or a list (one per step)."""
    out = []
    for i, step in enumerate(range(1, steps + 1)):
        row = healthy(step)
        for key, value in (changes or {}).items():
            row[key] = value[i] if isinstance(value, list) else value
        out.append({k: v for k, v in row.items() if k not in drop})
    return out


def merged(base: dict, changes: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        node = out
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def make_run(
    folder: Path,
    metrics: list[dict] | None,
    config: dict[str, Any] | None = None,
    overrides: list[str] | None = OVERRIDES,
    summary: dict[str, Any] | None = None,
    samples: dict[int, list[dict]] | None = None,
    torn: str = "",
    finished: bool = True,
) -> Path:
    """A run folder as `rlrecipes train` leaves it: config.yaml (CONFIG with the dotted `config`
    changes), versions.json, metrics.jsonl (None: none) ending in `torn`, summary.json
    (`finished`), and samples/step_N.jsonl."""
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(merged(CONFIG, config or {})))
    versions: dict[str, Any] = {"command": "rlrecipes train " + " ".join(overrides or [])}
    if overrides is not None:
        versions["job_overrides"] = overrides
    (folder / "versions.json").write_text(json.dumps(versions))
    if metrics is not None:
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in metrics) + torn)
    if finished:
        done = {"recipe": "grpo", "steps": len(metrics or []), "accuracy_before": 0.3, "accuracy_after": 0.5}
        (folder / "summary.json").write_text(json.dumps({**done, **(summary or {})}))
    for step, sample_rows in (samples or {}).items():
        (folder / "samples").mkdir(exist_ok=True)
        text = "".join(json.dumps({"step": step, **r}) + "\n" for r in sample_rows)
        (folder / "samples" / f"step_{step}.jsonl").write_text(text)
    return folder


def sample(group: int = 0, **values: Any) -> dict[str, Any]:
    """One stored completion (rlrecipes.step_samples' format)."""
    row = {
        "group": group,
        "prompt": "What is 12+7?",
        "completion": "12+7=19",
        "answer": "19",
        "rewards": {"accuracy": 1.0},
        "advantage": 0.5,
        "length": 6,
        "truncated": False,
    }
    return {**row, **values}

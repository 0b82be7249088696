"""Evaluate every saved checkpoint of a training run on a benchmark suite; report the
checkpoint with the best suite average alongside the last one.

One-shot RLVR reports the checkpoint with the best six-benchmark average (paper Tab. 8,
one-shot RLVR §3.1, App. B.5): MATH-500, Minerva Math and OlympiadBench greedy; AIME24, AIME25 and
AMC23 as avg@8 at temperature 0.6. Test accuracy keeps rising long after training
accuracy saturates, so the last checkpoint and the best one can differ.

A suite is a list of `Part`s, each one `rlrecipes eval` run (benchmarks + protocol).
Each (checkpoint, part) is an ordinary eval run directory under the output folder; one
that already holds a `summary.json` is reused, so an interrupted sweep resumes.

A torn checkpoint (a crash while saving: no completion marker where the run writes them,
no weights, or weights that do not load) is skipped with a one-line note, not a traceback
halfway through a sweep of hours.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from omegaconf import OmegaConf

from rlrecipes.compose.compose import compose_config, eval_config_for
from rlrecipes.display import format_duration
from rlrecipes.engine.checkpoints import CHECKPOINT_MARKER
from rlrecipes.errors import UserError
from rlrecipes.eval.benchmarks import SUITES
from rlrecipes.eval.runner import run_eval
from rlrecipes.eval.scoring import headline
from rlrecipes.rundir import write_manifest, write_text
from rlrecipes.storage import check_writable, writing


@dataclass(frozen=True)
class Part:
    benchmarks: tuple[str, ...]
    overrides: tuple[str, ...]  # eval overrides: protocol and its settings
    tag: str = ""  # distinguishes a benchmark scored twice (synthetic suite)

    def label(self, benchmark: str) -> str:
        return f"{benchmark}[{self.tag}]" if self.tag else benchmark


# `--suite NAME`: the evaluations run on every checkpoint (the benchmark suites themselves
# are `rlrecipes.eval.benchmarks.SUITES`).
CHECKPOINT_SUITES: dict[str, tuple[Part, ...]] = {
    # One-shot RLVR's six benchmarks (paper Tab. 8) under its protocol (§3.1, App. B.5):
    # Qwen2.5-Math CoT prompt, 3072 tokens; greedy, but avg@8 at temperature 0.6 on AIME/AMC.
    "paper": (Part(SUITES["paper_suite"], ("protocol=one_shot_rlvr",)),),
    # The same two settings on the synthetic held-out split (CPU runs, the bench).
    "synthetic": (
        Part(("arithmetic",), ("protocol=default",), tag="greedy"),
        Part(("arithmetic",), ("protocol=default", "protocol.num_samples=8", "protocol.temperature=0.6"), tag="avg@8"),
    ),
}


@dataclass(frozen=True)
class Checkpoint:
    step: int
    model: Optional[str]  # folder; None = the run's starting model (step 0)


@dataclass(frozen=True)
class Selection:
    steps: list[int]
    averages: dict[int, float]
    scores: dict[int, dict[str, float]]
    best_step: int
    last_step: int

    def as_dict(self) -> dict[str, Any]:
        def row(step: int) -> dict[str, Any]:
            return {"step": step, "average": self.averages[step], **self.scores[step]}

        return {
            "best_average": row(self.best_step),
            "last": row(self.last_step),
            "checkpoints": [row(s) for s in self.steps],
        }


def find_checkpoints(
    run_dir: str | Path, include_base: bool = True, every: int = 1, log: Callable[[str], None] = print
) -> list[Checkpoint]:
    """The run's starting model (step 0), `checkpoints/checkpoint-N`, and the final model.

    `every` keeps checkpoints whose step is a multiple of it (the final model always).
    """
    if every < 1:
        raise UserError(f"--every {every}: evaluate every N-th checkpoint needs N >= 1")
    run = Path(run_dir).expanduser()
    if not (run / "config.yaml").is_file():
        raise UserError(f"{run} is not a training run directory (no config.yaml)")
    found: dict[int, str] = {}
    folders = sorted((run / "checkpoints").glob("checkpoint-*"))
    # runs from before the completion marker have none; a run that writes it has it on every
    # complete checkpoint, so there a folder without it was cut short
    marked = any((f / CHECKPOINT_MARKER).is_file() for f in folders)
    for folder in folders:
        match = re.fullmatch(r"checkpoint-(\d+)", folder.name)
        if not match or int(match.group(1)) % every:
            continue
        if marked and not (folder / CHECKPOINT_MARKER).is_file():
            log(f"skipping {folder.name}: torn (no {CHECKPOINT_MARKER}; the save was cut short)")
        elif (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file():
            found[int(match.group(1))] = str(folder)
    summary = _read_json(run / "summary.json")
    if (run / "model" / "config.json").is_file() and summary.get("steps") is not None:
        found.setdefault(int(summary["steps"]), str(run / "model"))
    if not found:
        raise UserError(
            f"{run} has no saved model yet (checkpoints/checkpoint-N or model/); "
            "train with trainer.checkpoints.every=N to keep intermediate checkpoints"
        )
    ckpts = [Checkpoint(step, path) for step, path in sorted(found.items())]
    return ([Checkpoint(0, None)] if include_base and 0 not in found else []) + ckpts


WEIGHTS = ("*.safetensors", "pytorch_model*.bin", "adapter_model.bin")


def torn_reason(folder: Path) -> str | None:
    """Why `folder` cannot be evaluated (no weights, a missing shard, a file that does not
    load), or None. Safetensors headers are read, not the tensors: a truncated file fails
    there, as its header gives offsets past the end."""
    files = sorted({f for pattern in WEIGHTS for f in folder.glob(pattern)})
    if not files:
        return "no weights"
    for index in folder.glob("*.index.json"):
        try:
            shards = set(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"{index.name} does not load"
        missing = sorted(s for s in shards if not (folder / s).is_file())
        if missing:
            return f"missing shard {missing[0]}"
    for file in files:
        try:
            if file.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(file), framework="pt") as f:
                    f.keys()
            else:
                import torch

                torch.load(file, map_location="cpu", weights_only=True, mmap=True)
        except Exception as exc:  # every loader error means the same here: not usable
            first = str(exc).splitlines()[0][:120] if str(exc) else ""
            return f"{file.name} does not load ({type(exc).__name__}: {first})"
    return None


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def pick_best(scores: dict[int, dict[str, float]]) -> Selection:
    """Average each checkpoint's benchmark scores (unweighted, as the paper's Avg column);
    the best is the highest average, the earliest step on ties; the last is the last step.

    Every checkpoint must have the same benchmarks, or the averages are not comparable.
    """
    if not scores:
        raise UserError("no checkpoint was evaluated")
    steps = sorted(scores)
    names = set(scores[steps[0]])
    for step in steps:
        if set(scores[step]) != names or not names:
            raise UserError(
                f"checkpoint {step} has benchmarks {sorted(scores[step])}, "
                f"expected {sorted(names)}; averages would not be comparable"
            )
    averages = {s: sum(scores[s].values()) / len(scores[s]) for s in steps}
    best = max(steps, key=lambda s: (averages[s], -s))
    return Selection(steps, averages, {s: dict(scores[s]) for s in steps}, best, steps[-1])


Evaluate = Callable[[Checkpoint, Part, Path], dict[str, float]]
SETTINGS = "checkpoint_eval_settings.json"  # what a part folder was evaluated with
RERUN = "free space (or choose another --out) and rerun: finished evaluations are reused"


def sweep(
    checkpoints: Sequence[Checkpoint],
    parts: Sequence[Part],
    out_dir: Path,
    evaluate: Evaluate,
    log: Callable[[str], None] = print,
) -> Selection:
    """Evaluate every (checkpoint, part); `evaluate` returns {benchmark: headline score}.

    A line before each evaluation says where the sweep is (a log file shows it at once);
    a torn checkpoint folder is skipped with a note."""
    scores: dict[int, dict[str, float]] = {}
    total, done, started = len(checkpoints) * len(parts), 0, time.monotonic()
    for i, ckpt in enumerate(checkpoints, 1):
        folder = Path(ckpt.model) if ckpt.model else None
        reason = torn_reason(folder) if folder is not None and folder.is_dir() else None
        if reason:
            log(f"skipping checkpoint {ckpt.step} ({folder}): torn, {reason}")
            total -= len(parts)
            continue
        scores[ckpt.step] = {}
        for k, part in enumerate(parts):
            elapsed = time.monotonic() - started
            eta = format_duration(elapsed / done * (total - done)) if done else "-"
            log(
                f"checkpoint {i}/{len(checkpoints)} (step {ckpt.step}), part {k + 1}/{len(parts)} "
                f"[{', '.join(part.benchmarks)}]: {done}/{total} evaluations done, "
                f"{format_duration(elapsed)} elapsed, ETA {eta}"
            )
            result = evaluate(ckpt, part, out_dir / f"step-{ckpt.step}" / f"part-{k}")
            done += 1
            for bench in part.benchmarks:
                scores[ckpt.step][part.label(bench)] = result[bench]
    return pick_best(scores)


def eval_with_runner(run_dir: Path, overrides: Sequence[str], log: Callable[[str], None]) -> Evaluate:
    """An `Evaluate` that runs `rlrecipes eval` in-process with the run's model and data config.

    A part folder already holding a `summary.json` from the same settings is reused;
    one from other settings is an error rather than a silent mix of two protocols.
    """
    train_cfg = OmegaConf.load(run_dir / "config.yaml")

    def evaluate(ckpt: Checkpoint, part: Part, part_dir: Path) -> dict[str, float]:
        eval_overrides = [*part.overrides, f"benchmark.names=[{','.join(part.benchmarks)}]", *overrides]
        settings = {"model": ckpt.model, "overrides": eval_overrides}
        done = _read_json(part_dir / "summary.json")
        if done and _read_json(part_dir / SETTINGS) != settings:
            raise UserError(
                f"{part_dir} holds results for other settings ({_read_json(part_dir / SETTINGS)}); "
                "pass --out DIR for a new sweep"
            )
        if not done:
            cfg = eval_config_for(train_cfg, ckpt.model, eval_overrides)
            with writing(part_dir, RERUN):
                part_dir.mkdir(parents=True, exist_ok=True)
                write_manifest(part_dir, cfg)
                write_text(part_dir / SETTINGS, json.dumps(settings, indent=2) + "\n")
            log(f"step {ckpt.step}: {', '.join(part.benchmarks)} [{' '.join(part.overrides)}]")
            done = run_eval(cfg, part_dir, log=log)
        scores = {name: headline(m) for name, m in done["benchmarks"].items()}
        missing = [f"{name} ({key})" for name, (key, value) in scores.items() if value is None]
        if missing:
            raise UserError(f"{part_dir}: no score for {', '.join(missing)}; delete the folder to redo it")
        return {name: value for name, (_, value) in scores.items()}

    return evaluate


def eval_checkpoints(
    run_dir: str | Path,
    suite: str = "paper",
    overrides: Sequence[str] = (),
    out: Optional[str | Path] = None,
    include_base: bool = True,
    every: int = 1,
    log: Callable[[str], None] = print,
) -> Selection:
    if suite not in CHECKPOINT_SUITES:
        raise UserError(f"--suite {suite!r} is unknown; valid: {', '.join(CHECKPOINT_SUITES)}")
    run = Path(run_dir).expanduser()
    out_dir = Path(out).expanduser() if out else run / f"checkpoint_eval_{suite}"
    checkpoints = find_checkpoints(run, include_base, every, log=log)
    for part in CHECKPOINT_SUITES[suite]:  # a bad key fails now, not after the first checkpoint
        compose_config("eval", [*part.overrides, f"benchmark.names=[{','.join(part.benchmarks)}]", *overrides])
    check_writable(out_dir, "choose another --out")  # now, not after the first checkpoint's evaluation
    selection = sweep(checkpoints, CHECKPOINT_SUITES[suite], out_dir, eval_with_runner(run, overrides, log), log=log)
    with writing(out_dir, RERUN):
        write_text(
            out_dir / "checkpoint_eval.json",
            json.dumps({"run_dir": str(run), "suite": suite, **selection.as_dict()}, indent=2) + "\n",
        )
    return selection

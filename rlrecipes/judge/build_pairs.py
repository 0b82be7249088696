"""Build a pair file from a model's own samples: J1's verifiable half (arXiv 2505.10320 §2,
the MATH pairs: chosen = a sample graded correct, rejected = one graded wrong).

The samples come from a generation backend; grading is the project's (the data's verifier:
extract + equivalence, or a synthetic task's checker). The file is jsonl with
`id, prompt, chosen, rejected` per pair, plus `<file>.provenance.json` (model, data, seed,
sampling, counts). Neither file is ever overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from rlrecipes.errors import UserError
from rlrecipes.judge.pairs import PairBuild, pairs_from_graded


def provenance_path(path: Path) -> Path:
    return path.with_name(path.name + ".provenance.json")


def check_new(path: Path) -> None:
    """Fail before any generation if the pair file or its provenance already exists."""
    for target in (path, provenance_path(path)):
        if target.exists():
            raise UserError(f"{target} already exists; pair files are never overwritten: choose another --out")


def build_pairs(
    problems: Sequence[dict[str, Any]],
    samples: Sequence[Sequence[str]],
    verify: Callable[[str, Any], bool],
    seed: int,
) -> PairBuild:
    """Grade every sample against its problem's gold answer and pair one right with one wrong."""
    graded = [[bool(verify(text, it["answer"])) for text in texts] for it, texts in zip(problems, samples)]
    return pairs_from_graded(problems, samples, graded, seed)


def write_pairs(path: Path, build: PairBuild, provenance: dict[str, Any]) -> None:
    """The pair file and its provenance, both created exclusively."""
    check_new(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x") as f:
        for pair in build.pairs:
            f.write(
                json.dumps({"id": pair.id, "prompt": pair.prompt, "chosen": pair.chosen, "rejected": pair.rejected})
                + "\n"
            )
    with open(provenance_path(path), "x") as f:
        json.dump({**provenance, "counts": build.counts()}, f, indent=2)
        f.write("\n")

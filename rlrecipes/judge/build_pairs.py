"""Build a pair file from a model's own samples: J1's verifiable half (arXiv 2505.10320 §2,
the MATH pairs: chosen = a sample graded correct, rejected = one graded wrong).

The samples come from a generation backend; grading is the project's (the data's verifier:
extract + equivalence, or a synthetic task's checker). The file is jsonl with
`id, prompt, chosen, rejected` per pair, plus `<file>.provenance.json` (model, data, seed,
sampling, counts). A pair file is never overwritten; both are written whole (a temporary
file, then a rename), the pair file last, so an interrupted write leaves no torn file that
would block its own rerun.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence

from rlrecipes.errors import UserError
from rlrecipes.judge.pairs import PairBuild, pairs_from_graded
from rlrecipes.rundir import write_text
from rlrecipes.storage import check_writable, writing


def provenance_path(path: Path) -> Path:
    return path.with_name(path.name + ".provenance.json")


def check_new(path: Path) -> None:
    """Fail before any generation if the pair file exists or could not be written there.

    A provenance file without its pair file is what an interrupted write leaves: it
    describes no pairs, and the rerun replaces it."""
    if path.exists():
        raise UserError(f"{path} already exists; pair files are never overwritten: choose another --out")
    check_writable(path, "choose another --out")


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
    """The provenance, then the pair file, each written whole; the pair file is never overwritten."""
    check_new(path)
    lines = [
        json.dumps({"id": p.id, "prompt": p.prompt, "chosen": p.chosen, "rejected": p.rejected}) + "\n"
        for p in build.pairs
    ]
    with writing(path, "free space (or choose another --out) and rerun"):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(provenance_path(path), json.dumps({**provenance, "counts": build.counts()}, indent=2) + "\n")
        write_text(path, "".join(lines))

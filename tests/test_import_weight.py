"""The metadata commands load no deep-learning stack.

`rlrecipes recipes`, `rlrecipes config show` and `rlrecipes eval-checkpoints --help` read the
registry and the configs only; importing torch, transformers, TRL, datasets, accelerate, peft
or vLLM would add seconds to each. Every recipe module is imported by them (the registry), so
a recipe imports the engine modules that need torch inside the method that uses them
(`hooks()`), and the engine modules it does import at module level import torch where they
use it. Each command runs in a fresh interpreter; a failure names the rlrecipes lines that
first imported the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "trl", "datasets", "accelerate", "peft", "vllm")

COMMANDS = [
    ["recipes"],
    ["config", "show"],
    ["config", "show", "recipe=ppo"],
    ["config", "show", "experiment=search_r1_toy"],  # its ${factbase_corpus:} reads rlrecipes.models.cache
    ["eval-checkpoints", "--help"],
]

# `python -c PROBE JOB`: runs the CLI with JOB's args (its output discarded) and writes to JOB's
# file its exit status and, for each package of JOB's list left in sys.modules, the rlrecipes
# lines on the stack when it was first looked for.
PROBE = """
import contextlib, io, json, os, sys, traceback

job = json.loads(sys.argv[1])
package = os.sep + "rlrecipes" + os.sep
first = {}


class FirstLookup:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in job["heavy"] and top not in first:
            stack = traceback.extract_stack()
            first[top] = [f"{f.filename}:{f.lineno}: {f.line}" for f in stack if package in f.filename]
        return None


sys.meta_path.insert(0, FirstLookup())
from rlrecipes.cli import main

with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(job["args"])
        status = 0
    except SystemExit as exc:
        status = exc.code
with open(job["out"], "w") as f:
    json.dump({"status": status, "loaded": {p: first.get(p, []) for p in job["heavy"] if p in sys.modules}}, f)
"""


def imported_heavy(args: list[str], out: str) -> dict[str, list[str]]:
    """Heavy package -> the rlrecipes lines that first imported it, after `rlrecipes ARGS`."""
    job = json.dumps({"args": args, "heavy": HEAVY, "out": out})
    run = subprocess.run([sys.executable, "-c", PROBE, job], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    result = json.loads(open(out).read())
    assert result["status"] == 0, f"rlrecipes {' '.join(args)} exited with {result['status']}:\n{run.stderr}"
    return result["loaded"]


def _short(line: str) -> str:
    """`rlrecipes/...` instead of the absolute path of the checkout."""
    return line[line.rindex(os.sep + "rlrecipes" + os.sep) + 1 :]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_metadata_command_imports_no_deep_learning_package(args, tmp_path):
    loaded = imported_heavy(args, str(tmp_path / "probe.json"))
    assert not loaded, "\n".join(
        f"`rlrecipes {' '.join(args)}` imported {package}, first through:\n    "
        + "\n    ".join(_short(line) for line in chain)
        for package, chain in loaded.items()
    )

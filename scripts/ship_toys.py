"""Build the toy models that ship with rlrecipes (rlrecipes/models/shipped.py says why).

Each toy is built by the project's own builder from the config its command composes, exactly
as `rlrecipes train` would build it on a machine without it, then written with its build record
to rlrecipes/models/shipped_toys/NAME/ and listed in index.json with the commit, the command,
the sha256 of its files, this machine's CPU and the build's time. Run it from a clean checkout
(the commit is recorded; a dirty tree is refused unless --allow-dirty):

    .venv/bin/python scripts/ship_toys.py                  # every toy in SHIPPED
    .venv/bin/python scripts/ship_toys.py quickstart tir_toy   # some of them (the others keep their entry)

Builds are single-threaded (models/toy.py); two can run side by side on 2 cores.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# name -> the `rlrecipes train` overrides whose toy it is
SHIPPED: dict[str, list[str]] = {
    "quickstart": [],
    "countdown": ["data=countdown"],
    "toy_vllm": ["model=toy_vllm"],
    "tir_toy": ["experiment=tir_toy"],
    "search_r1_toy": ["experiment=search_r1_toy"],
    "j1_toy": ["experiment=j1_toy"],
    "long_documents_toy": ["experiment=long_documents_toy"],
}


def toy_inputs(overrides: list[str]):
    """(config, task, build key) of the toy `rlrecipes train OVERRIDES` would build."""
    from rlrecipes.compose import compose_config
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import toy_key
    from rlrecipes.training.plan import plan_run

    cfg = compose_config("train", overrides)
    recipe = plan_run(cfg, None, hardware=False).recipe
    task = (recipe.problem_set(cfg.data) or load_problem_set(cfg.data)).task
    return cfg, task, toy_key(cfg.model, recipe.warm_start_key(cfg.data))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def build(name: str, commit: str) -> dict:
    import torch

    from rlrecipes.integrity import content_digest
    from rlrecipes.models import toy
    from rlrecipes.models.cache import RECORD, digest
    from rlrecipes.models.shipped import NOT_SHIPPED, SHIPPED_ROOT

    overrides = SHIPPED[name]
    cfg, task, key = toy_inputs(overrides)
    target = SHIPPED_ROOT / name
    started = time.time()
    with tempfile.TemporaryDirectory(prefix=f"{name}.", dir=SHIPPED_ROOT) as tmp:
        folder = Path(tmp) / name
        folder.mkdir()
        toy.build_toy(folder, cfg.model, task, log=lambda line: print(f"[{name}] {line}", flush=True))
        (folder / RECORD).write_text(json.dumps(key, indent=2, default=str) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        folder.rename(target)
    report = json.loads((target / "warm_start.json").read_text())
    return {
        "command": " ".join(["rlrecipes train", *overrides]),
        "overrides": overrides,
        "key_digest": digest(key),
        "content_sha256": content_digest(target, exclude=NOT_SHIPPED),
        "bytes": sum(p.stat().st_size for p in target.iterdir() if p.is_file()),
        "commit": commit,
        "built": time.strftime("%Y-%m-%d", time.gmtime()),
        "build_seconds": round(time.time() - started),
        "cpu": _cpu(),
        "torch": torch.__version__,
        "parameters": report["parameters"],
        "warm_start_steps": report["steps"],
        "dev_accuracy": report["dev_accuracy"],
        "plateaued": report["plateaued"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"toys to build (default: all of {', '.join(SHIPPED)})")
    parser.add_argument("--allow-dirty", action="store_true", help="build from a checkout with uncommitted changes")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in SHIPPED]
    if unknown:
        parser.error(f"unknown toy {unknown[0]!r}; valid: {', '.join(SHIPPED)}")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "rlrecipes", "conf")
    if dirty and not args.allow_dirty:
        parser.error("rlrecipes/ or conf/ has uncommitted changes; the recorded commit would not be what built it")
    commit = _git("rev-parse", "HEAD") + ("-dirty" if dirty else "")

    from rlrecipes.models.shipped import INDEX_NAME, SHIPPED_ROOT

    SHIPPED_ROOT.mkdir(exist_ok=True)
    index_path = SHIPPED_ROOT / INDEX_NAME
    for name in args.names or list(SHIPPED):
        entry = build(name, commit)
        with open(SHIPPED_ROOT / ".index.lock", "w") as lock:  # two builds side by side update one index
            fcntl.flock(lock, fcntl.LOCK_EX)
            index = json.loads(index_path.read_text()) if index_path.exists() else {"toys": {}}
            index["toys"][name] = entry
            index["toys"] = dict(sorted(index["toys"].items()))
            index_path.write_text(json.dumps(index, indent=2) + "\n")
        print(f"[{name}] shipped: {entry['bytes'] / 1e6:.1f} MB, {entry['build_seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

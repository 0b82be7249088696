"""The result of `make gpu-check` (scripts/gpu_check.sh): one JSON file and one table.

Reads the per-phase lines scripts/gpu_check_plugin.py wrote and adds what the numbers mean
nothing without: the commit, the machine (GPU, driver, CUDA), the package versions actually
imported (the wheels installed for the check first), the requirements of those wheels and of
rlrecipes that this environment does not meet, and what was skipped and so stays unverified.
The file is replaced only once it is complete (an interrupted check leaves the last one).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
    "tokenizers",
    "safetensors",
    "hydra-core",
    "omegaconf",
    "antlr4-python3-runtime",
    "math-verify",
    "latex2sympy2_extended",
    "typer",
    "rich",
    "pyarrow",
    "fsspec",
    "numpy",
    "vllm",
    "pytest",
    "pytest-timeout",
)


def summarize_tests(lines: list[dict]) -> list[dict]:
    """One row per test, in the order they started: passed, failed, error (setup or teardown
    failed), skipped, or cut_off (started, never finished: the run's time budget ended it)."""
    rows: dict[str, dict] = {}
    for line in lines:
        row = rows.setdefault(
            line["test"], {"test": line["test"], "outcome": "cut_off", "seconds": 0.0, "reason": None}
        )
        if line["when"] == "start":
            row["reason"] = "still running when the time budget ended the run"
            continue
        row["seconds"] = round(row["seconds"] + line["seconds"], 2)
        if line["outcome"] == "failed":
            row["outcome"] = "failed" if line["when"] == "call" else "error"
            row["reason"] = line["reason"]
        elif line["outcome"] == "skipped" and row["outcome"] not in ("failed", "error"):
            row["outcome"], row["reason"] = "skipped", line["reason"]
        elif line["when"] == "call" and row["outcome"] == "cut_off":
            row["outcome"], row["reason"] = "passed", None
    return list(rows.values())


def count(rows: list[dict]) -> dict[str, int]:
    outcomes = ("passed", "failed", "error", "skipped", "cut_off")
    return {o: sum(r["outcome"] == o for r in rows) for o in outcomes}


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {"cpu_cores": os.cpu_count(), "platform": platform.platform()}
    try:
        import torch
    except ImportError:
        return {**info, "cuda_available": False}
    info.update(cuda_available=torch.cuda.is_available(), torch_cuda=torch.version.cuda, gpu_count=0)
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(
            gpu_count=torch.cuda.device_count(),
            gpu=props.name,
            gpu_memory_gib=round(props.total_memory / 2**30, 1),
            compute_capability=f"{props.major}.{props.minor}",
            cudnn=torch.backends.cudnn.version(),
            bf16_supported=torch.cuda.is_bf16_supported(),
        )
    try:
        smi = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        info["driver"] = subprocess.run(smi, capture_output=True, text=True, timeout=20).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        info["driver"] = None
    return info


def unmet_requirements(site: Path | None) -> list[str]:
    """Requirements of the installed wheels and of rlrecipes (pyproject.toml) that the packages
    found on sys.path do not satisfy: the wheels go in with --no-deps, so nothing checked them."""
    import tomllib
    from importlib.metadata import PackageNotFoundError, distributions, version

    from packaging.requirements import Requirement

    wanted = [("rlrecipes", r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    if site is not None and site.is_dir():
        for dist in distributions(path=[str(site)]):
            wanted += [(dist.metadata["Name"], r) for r in dist.requires or []]
    out = []
    for owner, text in wanted:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue  # an optional extra, or another Python / platform
        try:
            found = version(req.name)
        except PackageNotFoundError:
            out.append(f"{owner} needs {req}: not installed")
            continue
        if req.specifier and not req.specifier.contains(found, prereleases=True):
            out.append(f"{owner} needs {req}: found {found}")
    return sorted(set(out))


def commit() -> str | None:
    if os.environ.get("GPU_CHECK_COMMIT"):
        return os.environ["GPU_CHECK_COMMIT"]
    try:
        git = ["git", "-C", str(ROOT)]
        sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        dirty = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if sha.returncode != 0:
        return None
    return sha.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def status(rows: list[dict], pytest_rc: int, cuda: bool) -> str:
    counts = count(rows)
    if counts["failed"] or counts["error"] or counts["cut_off"] or pytest_rc != 0:
        return "failed"
    if not cuda:
        return "no_cuda"  # every test skipped: nothing about the GPU paths was checked
    return "passed"


def table(rows: list[dict]) -> str:
    width = max([len("test")] + [len(r["test"].split("::")[-1]) for r in rows])
    lines = [f"{'test':<{width}}  {'outcome':<8}  {'seconds':>7}  reason", "-" * (width + 30)]
    for r in rows:
        name = r["test"].split("::")[-1]
        lines.append(f"{name:<{width}}  {r['outcome']:<8}  {r['seconds']:>7.1f}  {r['reason'] or ''}")
    return "\n".join(lines)


def write_atomically(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=Path, required=True, help="gpu_check_plugin's log")
    parser.add_argument("--pytest-rc", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--started", type=float, required=True, help="time.time() when the check began")
    parser.add_argument("--budget-s", type=float, required=True)
    parser.add_argument("--test-timeout-s", type=float, required=True)
    parser.add_argument("--site", type=Path, default=None, help="where the wheels were installed")
    parser.add_argument("--wheelhouse", type=Path, default=None)
    args = parser.parse_args(argv)

    lines = [json.loads(x) for x in args.tests.read_text().splitlines()] if args.tests.is_file() else []
    rows = summarize_tests(lines)
    host = machine()
    wheels = sorted(p.name for p in args.wheelhouse.glob("*.whl")) if args.wheelhouse else []
    result = {
        "check": "gpu_check",
        "status": status(rows, args.pytest_rc, host.get("cuda_available", False)),
        "commit": commit(),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": "make gpu-check (scripts/gpu_check.sh)",
        "wall_seconds": round(time.time() - args.started, 1),
        "budget_s": args.budget_s,
        "test_timeout_s": args.test_timeout_s,
        "pytest_exit_code": args.pytest_rc,
        "cut_off_by_budget": args.pytest_rc in (124, 137),
        "machine": host,
        "versions": versions(),
        "wheels_installed": wheels,
        "unmet_requirements": unmet_requirements(args.site),
        "counts": count(rows),
        "tests": rows,
        "not_verified": [f"{r['test'].split('::')[-1]}: {r['reason']}" for r in rows if r["outcome"] == "skipped"],
    }
    write_atomically(args.out, result)
    print(table(rows))
    counts = ", ".join(f"{v} {k}" for k, v in result["counts"].items() if v)
    print(f"gpu-check {result['status']}: {counts or 'no tests ran'} in {result['wall_seconds']} s -> {args.out}")
    if result["unmet_requirements"]:
        print("unmet requirements: " + "; ".join(result["unmet_requirements"]))
    return 1 if result["status"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())

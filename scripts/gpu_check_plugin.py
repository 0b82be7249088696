"""pytest plugin of `make gpu-check` (scripts/gpu_check.sh): one JSON line per test phase,
written as it happens, so a run killed at its time budget still tells what finished and
which test was running. scripts/gpu_check_report.py reads the file.

    pytest -p gpu_check_plugin --gpu-check-log FILE   (scripts/ on PYTHONPATH)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu-check-log", default=None, help="append one JSON line per test phase to this file")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--gpu-check-log")
    if path:
        config.pluginmanager.register(PhaseLog(Path(path)), "gpu_check_phase_log")


def reason(report: pytest.TestReport) -> str | None:
    """A skip's reason or a failure's one-line message; None when the phase passed."""
    if report.passed:
        return None
    longrepr = report.longrepr
    if report.skipped and isinstance(longrepr, tuple):  # (file, line, "Skipped: <reason>")
        return str(longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    return " ".join((crash.message if crash is not None else str(longrepr)).split())[:500]  # one line


class PhaseLog:
    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, record: dict) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")

    def pytest_runtest_logstart(self, nodeid: str, location: tuple) -> None:
        self.write({"test": nodeid, "when": "start"})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.write(
            {
                "test": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "seconds": round(report.duration, 2),
                "reason": reason(report),
            }
        )

"""rlrecipes.phase: a long step is announced, ticks while it runs and says how long it took."""

from __future__ import annotations

import re
import threading

import pytest

from rlrecipes.phase import Phase


def test_a_phase_is_announced_ticks_and_reports_its_duration():
    lines: list[str] = []
    ticked = threading.Event()

    def log(line: str) -> None:
        lines.append(line)
        if "elapsed" in line:
            ticked.set()

    with Phase("starting the vLLM engine", log, expect_s=248, every_s=0.01):
        assert ticked.wait(30), lines  # the step is silent itself: the phase speaks while it waits
    assert lines[0] == "starting the vLLM engine (about 4m08s measured on 2 CPU cores) ..."
    # a tick's time depends on the machine's load; its form does not
    assert re.fullmatch(r"starting the vLLM engine: \d+s elapsed, ETA ~4m0\ds", lines[1]), lines
    assert re.fullmatch(r"starting the vLLM engine: done in \d+s", lines[-1]), lines


def test_ticks_count_down_a_measured_expectation_and_say_when_it_is_passed():
    phase = Phase("indexing the corpus", print, expect_s=90)
    assert phase.tick_line(30) == "indexing the corpus: 30s elapsed, ETA ~1m00s"
    assert phase.tick_line(150) == "indexing the corpus: 2m30s elapsed, longer than the 1m30s measured"
    assert Phase("held-out accuracy", print).tick_line(61) == "held-out accuracy: 1m01s elapsed"


def test_a_failed_step_stops_the_ticks_and_claims_nothing():
    lines: list[str] = []
    with pytest.raises(RuntimeError):
        with Phase("loading", lines.append, expect_s=60, every_s=0.01) as phase:
            raise RuntimeError("no such model")
    assert not phase._ticker.is_alive()
    assert lines[0] == "loading (about 1m00s measured on 2 CPU cores) ..."
    assert not any("done" in line for line in lines)


def test_a_step_of_unknown_length_speaks_only_once_it_has_run_quiet_s():
    lines: list[str] = []
    with Phase("held-out accuracy", lines.append, quiet_s=60):
        pass
    assert lines == []  # a 2-second pass prints nothing
    ticked = threading.Event()

    def log(line: str) -> None:
        lines.append(line)
        ticked.set()

    with Phase("held-out accuracy", log, quiet_s=0.01, every_s=60):
        assert ticked.wait(30)
    assert re.fullmatch(r"held-out accuracy: \d+s elapsed", lines[0]), lines
    assert re.fullmatch(r"held-out accuracy: done in \d+s", lines[-1]), lines

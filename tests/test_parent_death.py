"""parent_death: a child ends with the process that started it."""

from __future__ import annotations

import functools
import signal
import subprocess
import sys

import pytest

from rlrecipes.parent_death import die_with_parent, dying_with_this_process

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")


@pytest.fixture
def handling_sigterm():
    """This process handles SIGTERM in Python, as `rlrecipes stages` does while a stage runs."""
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_a_child_whose_parent_already_died_ends_before_it_runs(handling_sigterm):
    # pid 1 is not this child's parent: as if the starting process had died before the prctl.
    # Without SIGTERM's default action the forked child would run the inherited handler and go on.
    child = subprocess.run(
        [sys.executable, "-c", "print('ran')"],
        preexec_fn=functools.partial(die_with_parent, 1),
        capture_output=True,
        text=True,
    )
    assert child.returncode == -signal.SIGTERM and "ran" not in child.stdout


def test_a_child_of_a_living_parent_runs(handling_sigterm):
    child = subprocess.run(
        [sys.executable, "-c", "print('ran')"], preexec_fn=dying_with_this_process(), capture_output=True, text=True
    )
    assert child.returncode == 0 and child.stdout == "ran\n"

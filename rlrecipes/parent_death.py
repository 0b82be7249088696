"""A child process that ends with the process that started it (Linux's PR_SET_PDEATHSIG): a stage
of `rlrecipes stages`, or a benchmark's run, is not left training on after its parent is killed."""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import sys
from typing import Callable, Optional

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# looked up once, here: a child between fork and exec should only call it (subprocess's preexec_fn)
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent(parent: int) -> None:
    """Called in the child: Linux sends it SIGTERM when the thread that started it ends, `parent`
    being the starting process's id. Where `parent` had died before the call (the child now has
    another parent), it sends itself that signal. SIGTERM's action is first the default one: a child
    forked from a process that handles SIGTERM in Python would run that handler (and carry on)
    until it execs. Elsewhere than Linux it does nothing."""
    if _PRCTL is None:
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def dying_with_this_process() -> Optional[Callable[[], None]]:
    """subprocess.Popen's preexec_fn for a child that dies with this process; None off Linux
    (Popen then starts the child without running Python between fork and exec)."""
    return functools.partial(die_with_parent, os.getpid()) if _PRCTL is not None else None

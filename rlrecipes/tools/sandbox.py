"""Run a Python program from a model in a contained child process (the opt-in `python` tool).

Layers, each because one alone is not enough (the papers' code mostly has the first only:
ARPO `subprocess.run(timeout=120)`; SimpleTIR firejail with net none, 512 MB, 3 s CPU):

- a wall-clock timeout, then SIGKILL to the whole process group;
- new user, network, PID and mount namespaces (`unshare -r -n -p -f -m --mount-proc
  --kill-child`, util-linux): no network but an unconnected loopback, the program is PID 1
  of its own namespace so every process it forks dies with it (a fork bomb that escapes
  the process group with setsid still dies), and /proc shows only the sandbox's processes
  (the parent's environment cannot be read from /proc);
- resource limits: address space, CPU seconds, file size, open files, no core dumps, and
  a process cap (RLIMIT_NPROC, which Linux ignores for root: a root parent therefore runs
  the child as `nobody`);
- a fresh temporary working directory (removed afterwards), an empty environment,
  `python -I -S` (no user site, no PYTHON* variables, no site-packages);
- output read incrementally and capped; past the cap the program is killed.

Where the namespaces cannot be made (no `unshare`, or a kernel that forbids them) the tool
refuses with one line when it is built, before training starts; it never runs code
unconfined.
"""

from __future__ import annotations

import functools
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from rlrecipes.errors import ConfigError

NOBODY = 65534
NAMESPACES = ["-r", "-n", "-p", "-f", "-m", "--mount-proc", "--kill-child"]


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 5.0
    cpu_s: int = 3
    memory_mb: int = 512
    output_bytes: int = 4096
    file_mb: int = 16
    processes: int = 32
    open_files: int = 64


@dataclass(frozen=True)
class SandboxResult:
    output: str  # stdout and stderr interleaved, at most `output_bytes`
    exit_code: int | None  # None: killed by the sandbox (timeout or output cap)
    timed_out: bool = False
    output_capped: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.output_capped


def _limits(limits: SandboxLimits, drop_to: int | None):
    def apply() -> None:  # runs in the child between fork and exec
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if drop_to is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
            os.setgroups([])
            os.setgid(drop_to)
            os.setuid(drop_to)

    return apply


def _drop_to() -> int | None:
    return NOBODY if os.geteuid() == 0 else None


@functools.cache
def sandbox_interpreter() -> str:
    """A Python the sandboxed user can run inside the namespaces, checked once by running it
    there; ConfigError (one line) when there is none or the namespaces cannot be made."""
    if shutil.which("unshare") is None:
        raise ConfigError("the python tool needs util-linux's `unshare` for its sandbox; it is not installed")
    candidates = [sys.executable, shutil.which("python3") or "", "/usr/bin/python3"]
    last = ""
    for candidate in dict.fromkeys(c for c in candidates if c):
        result = _run([candidate, "-I", "-S", "-c", "print('ok')"], SandboxLimits(wall_s=10), None)
        if result.exit_code == 0 and result.output.strip() == "ok":
            return candidate
        last = result.output.strip().splitlines()[-1] if result.output.strip() else f"exit {result.exit_code}"
    raise ConfigError(
        f"the python tool's sandbox cannot start here (unshare -r -n -p -m refused or no usable python: {last})"
    )


def run_python(code: str, limits: SandboxLimits = SandboxLimits()) -> SandboxResult:
    """Run `code` as a program in the sandbox and return its capped output."""
    return _run([sandbox_interpreter(), "-I", "-S", "main.py"], limits, code)


def _run(argv: list[str], limits: SandboxLimits, code: str | None) -> SandboxResult:
    workdir = tempfile.mkdtemp(prefix="rlrecipes-sandbox-")
    try:
        drop_to = _drop_to()
        if drop_to is not None:
            os.chown(workdir, drop_to, drop_to)
        if code is not None:
            with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as handle:
                handle.write(code)
            if drop_to is not None:
                os.chown(os.path.join(workdir, "main.py"), drop_to, drop_to)
        process = subprocess.Popen(
            ["unshare", *NAMESPACES, *argv],
            cwd=workdir,
            env={"PATH": "/usr/bin:/bin", "HOME": workdir, "LANG": "C.UTF-8"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as one
            preexec_fn=_limits(limits, drop_to),
        )
        return _collect(process, limits)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _collect(process: subprocess.Popen, limits: SandboxLimits) -> SandboxResult:
    """Read the output as it comes until exit, the wall deadline or the output cap."""
    deadline = time.monotonic() + limits.wall_s
    chunks, size = [], 0
    timed_out = capped = False
    fd = process.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([fd], [], [], min(left, 0.1))
        if ready:
            data = os.read(fd, 65536)
            if not data:  # every writer closed: the program has ended
                break
            chunks.append(data)
            size += len(data)
            if size > limits.output_bytes:
                capped = True
                break
        elif process.poll() is not None:
            break
    if timed_out or capped:
        _kill_group(process)
    process.stdout.close()
    try:
        code = process.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        code = process.wait()
    output = b"".join(chunks)[: limits.output_bytes].decode("utf-8", errors="replace")
    return SandboxResult(output, None if (timed_out or capped) else code, timed_out, capped)


def _kill_group(process: subprocess.Popen) -> None:
    """SIGKILL the namespace's first process (the program): the kernel then kills every other
    process of its PID namespace and lets it exit only once they are all gone, so when
    `unshare` has reaped it nothing of the program is left. Then the process group, should
    `unshare` itself still run."""
    try:
        with open(f"/proc/{process.pid}/task/{process.pid}/children") as handle:
            children = [int(pid) for pid in handle.read().split()]
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

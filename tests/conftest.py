"""Shared fixtures: a tiny, quickly warm-started toy model cached once per session.

Tests compose the real configs (the same path users take) with `TINY` overrides that
shrink the task, the warm-start and the run to seconds on a CPU.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

# One cache for the whole session (and for subprocesses the tests start), one per pytest-xdist
# worker: a test that damages or rebuilds a cache entry on purpose must not pull it from under a
# test of the other worker reading it.
_CACHE = os.environ.get("RLRECIPES_CACHE") or str(Path(tempfile.gettempdir()) / "rlrecipes-test-cache")
os.environ["RLRECIPES_CACHE"] = str(Path(_CACHE) / os.environ.get("PYTEST_XDIST_WORKER", ""))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

TINY = [
    "data.synthetic.num_train=1200",
    "data.synthetic.num_eval=64",
    "model.toy.hidden_size=64",
    "model.toy.num_layers=2",
    "model.toy.intermediate_size=128",
    "model.toy.sft_max_steps=60",
    "model.toy.sft_eval_every=30",
    "model.toy.sft_dev_size=64",
    "trainer.max_steps=2",
    "trainer.prompts_per_rollout=4",
    "trainer.num_generations=4",
    "trainer.micro_batch_size=16",
    "trainer.progress=false",
]


def compose(*overrides: str):
    from rlrecipes.compose import compose_config

    return compose_config("train", [*TINY, *overrides])


def structured(schema: type, **values):
    """A typed config node of `schema` with some fields set (for unit tests of one group)."""
    from omegaconf import OmegaConf

    node = OmegaConf.structured(schema)
    for key, value in values.items():
        node[key] = value
    return node


@pytest.fixture(scope="session")
def toy_model_dir() -> Path:
    """The TINY toy model folder (built on first use, then read from the cache)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path

    cfg = compose()
    problems = load_problem_set(cfg.data)
    return Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None))


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"benchmark data not found at {SHARED_DATA}")
    return SHARED_DATA


_LAUNCHER_VARIABLES = (
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
    "SUBMITIT_EXECUTOR",
    # set per run by report_to (grpo_args.tracking_args): a later test's runs would log there
    "TENSORBOARD_LOGGING_DIR",
    "WANDB_DIR",
    "WANDB_PROJECT",
    "WANDB_MODE",
)


@pytest.fixture(autouse=True)
def _no_leaked_launcher_environment(request):
    """A test that leaves WORLD_SIZE & co. in os.environ makes every later subprocess a rank waiting
    for peers that never come (and a tracker directory sends later runs' logs elsewhere); restore
    them after each test whatever it did. A test that starts vLLM gets a free MASTER_PORT of its
    own: its engine's process group would take 29500, which the other xdist worker's test may hold."""
    saved = {key: os.environ.get(key) for key in _LAUNCHER_VARIABLES}
    if "vllm" in request.node.nodeid.lower() and "MASTER_PORT" not in os.environ:
        from tests.helpers.processes import free_port

        os.environ["MASTER_PORT"] = str(free_port())
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def stop_process_group(process: subprocess.Popen, term_wait_s: float = 20) -> None:
    """SIGTERM a server started with start_new_session=True (and its children), SIGKILL if it lingers."""
    for sig, wait in ((signal.SIGTERM, term_wait_s), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


TIERS = ("integration", "e2e", "gpu")
# fixtures that build or load a model: a test using one is not a unit test
MODEL_FIXTURES = ("toy_model_dir",)


def pytest_collection_modifyitems(config, items):
    """Keep the unit tier (`make test`) fast: a test that needs a model must say its tier. Under
    pytest-xdist (`make test-all`), the tests that start a vLLM engine (named so: vllm in the file
    or test name) share one group, run one at a time: two CPU engines at once would each take a
    third of the RAM for their KV cache beside the other worker's test."""
    for item in items:
        if "vllm" in item.nodeid.lower():
            item.add_marker(pytest.mark.xdist_group("vllm"))
        elif "sandbox" in item.nodeid.lower():  # the hostile suites judge concurrent calls: one at a time
            item.add_marker(pytest.mark.xdist_group("sandbox"))
    unmarked = [
        item.nodeid
        for item in items
        if any(f in item.fixturenames for f in MODEL_FIXTURES) and not any(item.get_closest_marker(t) for t in TIERS)
    ]
    if unmarked:
        raise pytest.UsageError(  # listed in full, so one pass fixes them
            "\n".join(unmarked) + "\n" + f"{unmarked[0]} uses a model fixture but is not marked integration or e2e "
            f"({len(unmarked)} such test(s); see tests/README.md)"
        )


@pytest.fixture
def unwritable_dir() -> Path:
    """A folder that cannot be created, even by root (who passes permission bits): sysfs
    refuses new entries, as a read-only filesystem does."""
    path = Path("/sys/rlrecipes-test-unwritable")
    try:
        path.mkdir()
    except OSError:
        return path
    path.rmdir()
    pytest.skip("/sys accepts new folders on this machine")


def cli(capsys, *args: str) -> tuple[int, str]:
    """`rlrecipes ARGS` in this process, as the console script runs it: (exit status, stdout +
    stderr). A traceback is not caught: it fails the test."""
    from rlrecipes.cli import main

    _reopen_library_log_streams()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out + out.err


def _reopen_library_log_streams() -> None:
    """transformers' log handler keeps the stderr it was made with (and that stream's flush): made
    in an earlier test's capture, it writes into a closed stream, and logging prints a traceback
    for each message."""
    import logging

    for handler in logging.getLogger("transformers").handlers:
        if isinstance(handler, logging.StreamHandler) and getattr(handler.stream, "closed", False):
            handler.stream = sys.stderr
            if "flush" in vars(handler):  # transformers binds the stream's own flush
                handler.flush = sys.stderr.flush


def one_error_line(text: str) -> str:
    """The one `error:` line of a command's output (asserting there is exactly one)."""
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in text, text
    return errors[0]

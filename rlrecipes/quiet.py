"""Quiet start-up: the dependencies' notes that do not concern a user of rlrecipes are filtered
here, once, before any of them is imported (`rlrecipes.cli.main` calls `quiet()` first).

What goes, and why each is safe to drop:
- vLLM's INFO lines (engine config, compile, KV cache sizes: about 50 per engine start) and
  its warnings, which on a CPU are install hints (Triton, libtcmalloc, libiomp, a model runner
  fallback, a recompile): seven at each engine start, none about the user's run; its errors
  stay, and a failure is raised as an exception whatever the level;
- DeepSpeed's "Setting accelerator to CPU" (rlrecipes chooses the device itself: trainer.use_cpu);
- transformers' and huggingface_hub's progress bars ("Loading weights", "Writing model
  shards") and transformers' advisory notes (tokenizer clean-up, aligned special tokens): the
  run's own lines report loading, and real errors are still raised;
- TRL's note that `rollout_func` is experimental, at every trainer start: the engine uses it
  on purpose (the tool loop's rollouts) against the TRL version it pins;
- torch's C++ notes in vLLM's engine process (NUMA binding policy) and the deprecation
  warnings vLLM's own code triggers (`torch.distributed.reduce_op`).

Only the main process of a multi-process launch (RANK 0) prints warnings at all: the other
ranks meet the same ones, and saying each once is enough.

A variable the user has set is left as it is (VLLM_LOGGING_LEVEL=INFO brings vLLM's lines back).
"""

from __future__ import annotations

import logging
import os
import warnings

ENVIRONMENT = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TORCH_CPP_LOG_LEVEL": "ERROR",
    "TRL_EXPERIMENTAL_SILENCE": "1",
}

# (logger, start of the message) of notes dropped wherever they come from
DROPPED_LOG_MESSAGES = (
    ("vllm.triton_utils.importing", "Triton is installed"),
    ("DeepSpeed", "Setting accelerator to CPU"),
)

# (message regex, category) of Python warnings dropped
DROPPED_WARNINGS = (
    (r".*torch\.distributed\.reduce_op.*is deprecated", FutureWarning),
    (r".*is_gradient_checkpointing.*", Warning),
)


class _DropStarting(logging.Filter):
    def __init__(self, start: str) -> None:
        super().__init__()
        self.start = start

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.start)


def is_main_rank() -> bool:
    """Rank 0 of a launch (or no launch at all); read from the launcher's variables, since
    this runs before torch.distributed exists."""
    return all(os.environ.get(key, "0") in ("", "0") for key in ("RANK", "LOCAL_RANK"))


def quiet() -> None:
    """Set the environment and filters above (idempotent)."""
    for key, value in ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    for name, start in DROPPED_LOG_MESSAGES:
        logger = logging.getLogger(name)  # the object the library gets later: the filter stays on it
        if not any(isinstance(f, _DropStarting) and f.start == start for f in logger.filters):
            logger.addFilter(_DropStarting(start))
    for message, category in DROPPED_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    if not is_main_rank():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)  # errors still show

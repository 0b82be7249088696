"""Held-out greedy accuracy during training, measured once per point however many processes run.

The measurements happen inside `trainer.train()` (at its start, every `every` steps and
at its end), because only then is the model what the optimizer trains: wrapped for DDP,
sharded by ZeRO-3 or FSDP. Every process generates for its own share of the problems
through TRL's `unwrap_model_for_generation` (which gathers ZeRO-3 parameters and, with
FSDP1, full parameters), so a sharded model is never asked to generate from its shards
and the work is split instead of repeated; the verdicts are gathered and every process
gets the same accuracy.

Each process pads its share to the same length so all of them run the same number of
`generate` calls: ZeRO-3 and FSDP forwards are collective and would otherwise hang.

When the run trains with tools (`rollout.tools`: the trainer's `rollout_func` is a
`ToolRollout`), accuracy is measured through the same tool loop, greedily
(`tool_loop/greedy.py`), on the model's own text; the processes then also agree on the
number of turns, as the sampled rollouts do.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Callable, Sequence

from transformers import TrainerCallback

from rlrecipes.generation import generate_completions
from rlrecipes.phase import Phase
from rlrecipes.tool_loop.greedy import greedy_tool_texts
from rlrecipes.tool_loop.rollout import ToolRollout, trainer_sync


def shard_indices(n: int, rank: int, world: int) -> tuple[list[int], int]:
    """Problem indices process `rank` of `world` generates for, padded to the same length on
    every process (by repeating its last index, or problem n-1 for an empty share), and how
    many of them are its real share."""
    if n == 0:
        return [], 0
    per = math.ceil(n / world)
    real = list(range(rank * per, min(n, (rank + 1) * per)))
    pad = real[-1] if real else n - 1
    return real + [pad] * (per - len(real)), len(real)


class HeldOutAccuracy(TrainerCallback):
    """Greedy accuracy on held-out problems: `before` (at train start), `after` (at train end)
    and `heldout_accuracy` logged every `every` steps; results on every process."""

    def __init__(
        self,
        prompts: Sequence[str],
        answers: Sequence[Any],
        verify: Callable[[str, Any], bool],
        tokenizer: Any,
        *,
        max_new_tokens: int,
        batch_size: int,
        before: bool,
        after: bool,
        every: int | None = None,
        log: Callable[[str], None] = lambda _: None,
    ):
        self.prompts, self.answers, self.verify = list(prompts), list(answers), verify
        self.log = log  # announces the passes before and after training (a minute or more on a CPU)
        self.tokenizer, self.max_new_tokens, self.batch_size = tokenizer, max_new_tokens, batch_size
        self.measure_before, self.measure_after, self.every = before and bool(prompts), after and bool(prompts), every
        self.trainer: Any = None  # set once the trainer exists
        self.before: float | None = None
        self.after: float | None = None
        self.seconds = 0.0  # time spent measuring (not training)

    def on_train_begin(self, args, state, control, **kwargs):
        if self.measure_before:
            with Phase(f"held-out accuracy before training ({len(self.prompts)} problems, greedy)", self.log):
                self.before = self.measure()

    def on_step_end(self, args, state, control, **kwargs):
        if self.every and self.prompts and state.global_step % self.every == 0:
            self.trainer.log_metric("heldout_accuracy", self.measure())

    def on_train_end(self, args, state, control, **kwargs):
        if self.measure_after:
            with Phase(f"held-out accuracy after training ({len(self.prompts)} problems, greedy)", self.log):
                self.after = self.measure()

    def measure(self) -> float:
        """Accuracy over all held-out problems, computed collectively by every process."""
        from accelerate.utils import gather_object
        from trl.models.utils import unwrap_model_for_generation

        started = time.time()
        t = self.trainer
        accelerator = t.accelerator
        indices, real = shard_indices(len(self.prompts), accelerator.process_index, accelerator.num_processes)
        dist = getattr(t, "_dist", None)  # TRL's FSDP1 full-parameter context (a no-op otherwise)
        full_params = dist.summon_full_params(t.model_wrapped, recurse=False) if dist else contextlib.nullcontext()
        with (
            unwrap_model_for_generation(t.model_wrapped, accelerator, gather_deepspeed3_params=True) as model,
            full_params,
        ):
            texts = self._texts(model, [self.prompts[i] for i in indices])
        verdicts = [bool(self.verify(text, self.answers[i])) for text, i in zip(texts[:real], indices[:real])]
        if accelerator.num_processes > 1:
            verdicts = gather_object(verdicts)
        self.seconds += time.time() - started
        return sum(verdicts) / len(self.prompts)

    def _texts(self, model: Any, prompts: list[str]) -> list[str]:
        """Greedy completions: through the tool loop when the run has tools, else one turn."""
        rollout = getattr(self.trainer, "rollout_func", None)
        if isinstance(rollout, ToolRollout):
            sync = trainer_sync(self.trainer)
            return greedy_tool_texts(model, self.tokenizer, rollout, prompts, self.batch_size, sync)
        completions = generate_completions(
            model, self.tokenizer, prompts, max_new_tokens=self.max_new_tokens, batch_size=self.batch_size
        )
        return [c[0] for c in completions]

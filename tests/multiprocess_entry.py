"""`rlrecipes` with a scripted reward registered and optional fault injection: the entry
point of the multi-process and resume tests.

RLRECIPES_TEST_FAULT makes the run die where a real one can:
- `kill_after_step:N`: SIGKILL right after step N is logged (between two steps);
- `kill_in_checkpoint:N`: SIGKILL after HF wrote checkpoint-N's files but before rlrecipes
  completed it (engine state and marker), i.e. during the checkpoint write;
- `term_after_step:N` / `int_after_step:N`: SIGTERM / SIGINT after step N is logged;
- `disk_full_at_final_save:0`: writing the trained model fails with ENOSPC.

`scripted_groups` scores a completion from its prompt and its position in the group only,
never from its sampled text, so which groups are mixed is the same whatever the process
count or the sampling noise: prompts whose CRC32 is divisible by 3 get one completion
right (a mixed group), the others none (a uniform group).
"""

import os
import signal
import sys
import zlib

from rlrecipes.rewards import register_reward

GROUP = 4  # must equal trainer.num_generations in the tests


@register_reward("scripted_groups", needs_answer=False)
def scripted_groups(ctx):
    def reward(prompts, completions, **columns):
        return [1.0 if zlib.crc32(p.encode()) % 3 == 0 and i % GROUP == 0 else 0.0 for i, p in enumerate(prompts)]

    return reward


def inject_fault(spec: str) -> None:
    from rlrecipes.engine.checkpoints import CheckpointKeeper
    from rlrecipes.engine.progress import MetricsWriter

    kind, step = spec.split(":")
    step = int(step)
    if kind == "disk_full_at_final_save":
        import errno

        import rlrecipes.models.lora as lora

        def save_trained_model(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        lora.save_trained_model = save_trained_model
        return
    if kind == "kill_in_checkpoint":

        def on_save(self, args, state, control, **kwargs):
            if state.global_step == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return original_save(self, args, state, control, **kwargs)

        original_save = CheckpointKeeper.on_save
        CheckpointKeeper.on_save = on_save
        return
    sig = {"kill_after_step": signal.SIGKILL, "term_after_step": signal.SIGTERM, "int_after_step": signal.SIGINT}[kind]

    def on_log(self, args, state, control, logs=None, **kwargs):
        out = original_log(self, args, state, control, logs=logs, **kwargs)
        if state.global_step == step and logs and "train_runtime" not in logs:
            os.kill(os.getpid(), sig)
        return out

    original_log = MetricsWriter.on_log
    MetricsWriter.on_log = on_log


@register_reward("always_raises", needs_answer=False)
def always_raises(ctx):
    def reward(prompts, completions, **columns):
        raise ZeroDivisionError("scripted failure")

    return reward


@register_reward("first_is_nan", needs_answer=False)
def first_is_nan(ctx):
    def reward(prompts, completions, **columns):
        return [float("nan")] + [1.0] * (len(completions) - 1)

    return reward


if __name__ == "__main__":
    from rlrecipes.cli import main

    if os.environ.get("RLRECIPES_TEST_FAULT"):
        inject_fault(os.environ["RLRECIPES_TEST_FAULT"])

    main(sys.argv[1:])

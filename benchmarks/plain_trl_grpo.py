"""Baseline for bench_engine_overhead: the quick-start as a plain TRL GRPOTrainer script.

Same model folder, rendered prompts, answers and GRPOConfig values as the `rlrecipes train`
run it is compared with (the bench writes them to a JSON file from the resolved config),
but no rlrecipes engine, hooks or callbacks; the reward is a plain "Answer: X" match.
Prints the per-step wall times, when each step ended (unix seconds) and the mean completion
lengths as one JSON line.

Usage: plain_trl_grpo.py MODEL_DIR ROWS.json GRPO_ARGS.json OUT_DIR THREADS [GO_FILE]
With GO_FILE, it builds its trainer, writes GO_FILE.ready and trains once GO_FILE exists: the
bench starts its partner meanwhile, so that both train at the same time whatever their start-ups.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

model_dir, rows_file, args_file, out_dir = sys.argv[1:5]
torch.set_num_threads(int(sys.argv[5]))  # the same thread count as the rlrecipes run
rows = json.loads(open(rows_file).read())  # [{"prompt": rendered text, "answer": ...}]
grpo_args = json.loads(open(args_file).read())
tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
model = AutoModelForCausalLM.from_pretrained(model_dir)


def accuracy(completions, answer, **_):
    out = []
    for text, gold in zip(completions, answer):
        found = re.findall(r"(?i)Answer\s*:\s*([^\n]+)", text[-300:])
        out.append(1.0 if found and found[-1].strip() == gold else 0.0)
    return out


class StepTimer(TrainerCallback):
    """Wall time between consecutive step ends: the same span rlrecipes' step_time covers."""

    def __init__(self):
        self.times, self.ends, self.last, self.lengths = [], [], None, []

    def on_train_begin(self, args, state, control, **kw):
        self.last = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        self.times.append(now - self.last)
        self.ends.append(time.time())  # the clock the rlrecipes run's metrics.jsonl records (wall_time)
        self.last = now

    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "completions/mean_length" in logs:
            self.lengths.append(logs["completions/mean_length"])


args = GRPOConfig(
    output_dir=out_dir,
    report_to="none",
    disable_tqdm=True,
    logging_steps=1,
    save_strategy="no",
    bf16=False,
    use_cpu=True,
    gradient_checkpointing=False,  # transformers 5.17's name (TRL's default is on)
    remove_unused_columns=False,
    vllm_importance_sampling_correction=False,
    use_bias_correction_kl=False,
    **grpo_args,
)
timer = StepTimer()
trainer = GRPOTrainer(
    model=model,
    reward_funcs=[accuracy],
    args=args,
    train_dataset=Dataset.from_list(rows),
    processing_class=tok,
    callbacks=[timer],
)
if len(sys.argv) > 6:
    go = Path(sys.argv[6])
    Path(f"{go}.ready").write_text("ready")
    while not go.exists():
        time.sleep(0.02)
trainer.train()
print(json.dumps({"step_times": timer.times, "step_ends": timer.ends, "completion_lengths": timer.lengths}))

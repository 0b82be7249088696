"""Baseline for bench_engine_overhead: the quick-start as a plain TRL GRPOTrainer script.

Same model folder, prompts, reward and GRPOConfig values as `rlrecipes train`, but no
rlrecipes engine, hooks or callbacks. Prints the per-step wall times as JSON.
"""

from __future__ import annotations

import json
import re
import sys
import time

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import GRPOConfig, GRPOTrainer

model_dir, problems_file, max_steps, out_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(int(sys.argv[5]))  # the same thread count as the rlrecipes run
problems = json.loads(open(problems_file).read())
tok = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
model = AutoModelForCausalLM.from_pretrained(model_dir)
rows = [
    {
        "prompt": tok.apply_chat_template(
            [{"role": "user", "content": p["problem"]}], tokenize=False, add_generation_prompt=True
        ),
        "answer": p["answer"],
    }
    for p in problems
]


def accuracy(completions, answer, **_):
    out = []
    for text, gold in zip(completions, answer):
        found = re.findall(r"(?i)Answer\s*:\s*([^\n]+)", text[-300:])
        out.append(1.0 if found and found[-1].strip() == gold else 0.0)
    return out


class StepTimer(TrainerCallback):
    """Wall time between consecutive step ends: the same span rlrecipes' step_time covers."""

    def __init__(self):
        self.times, self.last, self.lengths = [], None, []

    def on_train_begin(self, args, state, control, **kw):
        self.last = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        self.times.append(now - self.last)
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
    max_steps=max_steps,
    learning_rate=2e-4,
    lr_scheduler_type="constant",
    per_device_train_batch_size=64,
    gradient_accumulation_steps=1,
    steps_per_generation=1,
    num_generations=8,
    max_completion_length=16,
    temperature=1.0,
    bf16=False,
    use_cpu=True,
    activation_checkpointing=False,
    loss_type="grpo",
    beta=0.0,
    epsilon=0.2,
    scale_rewards="group",
    remove_unused_columns=False,
    seed=0,
    vllm_importance_sampling_correction=False,
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
trainer.train()
print(json.dumps({"step_times": timer.times, "completion_lengths": timer.lengths}))

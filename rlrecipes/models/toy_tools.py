"""The toy model's warm-start on demonstrations that call tools (the tool recipes' CPU toys).

As `toy.warm_start`, with two differences that make imitation honest about tools:

- the loss is on the model's own segments only (`ToolTask.segments`): the tool results
  inside a demonstration are context, never targets, just as the tool rollout keeps them
  out of the RL loss (`rollout.mask_tool_output`); so the model learns to call a tool and
  read its result, not to write results of its own;
- dev accuracy, which decides the plateau, is measured through the tool loop (the
  `dev_accuracy` the caller passes: greedy decoding where every tool call really runs), as
  held-out accuracy is during RL.

The plateau rule is the toy's (`toy._plateaued`).
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

import torch

from rlrecipes.data.templates import render_prompt
from rlrecipes.models.toy import _plateaued, progress_line, warm_start_split
from rlrecipes.phase import Phase

DevAccuracy = Callable[[Sequence[str], Sequence[Any]], float]  # (prompts, gold answers) -> accuracy


def segment_loss(
    model: Any, tokenizer: Any, prompts: list[list[int]], demonstrations: list[list[tuple[str, bool]]]
) -> Any:
    """Token-mean cross-entropy on the model's segments of each demonstration and its end of
    sequence; prompt tokens and tool results are context only. Segments are encoded one by
    one, as the rollout encodes a tool result apart from the model's tokens."""
    rows, targets = [], []
    for prompt, segments in zip(prompts, demonstrations):
        ids, trained = list(prompt), [False] * len(prompt)
        for text, by_model in segments:
            piece = tokenizer(text, add_special_tokens=False)["input_ids"]
            ids += piece
            trained += [by_model] * len(piece)
        rows.append(ids + [tokenizer.eos_token_id])
        targets.append(trained + [True])
    width = max(map(len, rows))
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (row, trained) in enumerate(zip(rows, targets)):
        ids[i, : len(row)] = torch.tensor(row)
        labels[i, : len(row)] = torch.tensor([t if keep else -100 for t, keep in zip(row, trained)])
        attn[i, : len(row)] = 1
    return model(input_ids=ids, attention_mask=attn, labels=labels).loss


def warm_start_on_segments(
    model: Any,
    tokenizer: Any,
    task: Any,
    cfg: Any,
    dev_accuracy: DevAccuracy,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Supervised warm-start of `model` on `task.segments` until dev accuracy (through the
    tool loop) plateaus; returns the learning curve, as `toy.warm_start` does."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small loses more to thread hand-offs than it gains
    try:
        return _train(model, tokenizer, task, cfg, dev_accuracy, log)
    finally:
        torch.set_num_threads(threads)


def _train(model: Any, tokenizer: Any, task: Any, cfg: Any, dev_accuracy: DevAccuracy, log: Callable) -> dict:
    dev, items = warm_start_split(task, tokenizer, cfg)
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_learning_rate, weight_decay=0.0)
    prompts = {it["id"]: _prompt_ids(tokenizer, it["problem"]) for it in items}
    dev_prompts = [render_prompt(it["problem"], "chat", tokenizer) for it in dev]
    dev_answers = [it["answer"] for it in dev]
    start = time.time()
    # the tool loop decodes every dev problem's turns to their limit before the model has learned to
    # stop: minutes before the first progress line, so the check is announced once it runs long
    with Phase(f"warm-start: dev accuracy of the untrained model ({len(dev)} problems, through the tools)", log):
        untrained = dev_accuracy(dev_prompts, dev_answers)
    curve: list[dict[str, Any]] = [{"step": 0, "loss": None, "dev_accuracy": untrained, "seconds": 0.0}]
    for step in range(1, cfg.sft_max_steps + 1):
        batch = rng.sample(items, min(cfg.sft_batch_size, len(items)))
        loss = segment_loss(
            model, tokenizer, [prompts[it["id"]] for it in batch], [task.segments(it, rng) for it in batch]
        )
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % cfg.sft_eval_every == 0 or step == cfg.sft_max_steps:
            acc = dev_accuracy(dev_prompts, dev_answers)
            curve.append(
                {
                    "step": step,
                    "loss": round(loss.item(), 4),
                    "dev_accuracy": acc,
                    "seconds": round(time.time() - start, 1),
                }
            )
            log(progress_line(step, cfg.sft_max_steps, loss.item(), f"dev accuracy through the tools {acc:.3f}", start))
            if _plateaued([c["dev_accuracy"] for c in curve], cfg.sft_patience, cfg.sft_tolerance):
                break
    return {
        "curve": curve,
        "dev_accuracy": curve[-1]["dev_accuracy"],
        "untrained_dev_accuracy": curve[0]["dev_accuracy"],
        "plateaued": _plateaued([c["dev_accuracy"] for c in curve], cfg.sft_patience, cfg.sft_tolerance),
        "steps": curve[-1]["step"],
        "dev_measured_with_tools": True,
    }


def _prompt_ids(tokenizer: Any, problem: str) -> list[int]:
    return tokenizer(render_prompt(problem, "chat", tokenizer), add_special_tokens=False)["input_ids"]

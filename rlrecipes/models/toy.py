"""The `toy` model: a character tokenizer and a tiny Qwen3/Llama, built in-process.

It is warm-started by supervised learning on the run's synthetic task (imitating the
task's flawed teacher) until greedy accuracy on a dev split stops improving, and the
result is cached on disk keyed by everything that determines it.

A build is the same every time on one machine (seeded weights and batches, one thread), but
not across machines: CPUs with other vector instructions round the same sums differently, and
the warm-start's updates grow those last-bit differences into a different model. Measured here
by forcing torch's AVX2 kernels on an AVX-512 CPU (ATEN_CPU_CAPABILITY): a 300-step build of
one-digit sums differed by 2e-7 in its weights after the first step, 0.2 after the last, and
ended at dev accuracy 0.6 instead of 0.55. Training in float64 did not close the gap
(transformers computes the loss and the rotary angles in float32 whatever the weights). So a
test must never depend on what a build learned (tests/helpers/scripted_model.py writes models whose
completions are fixed by construction).
"""

from __future__ import annotations

import json
import random
import string
import time
from pathlib import Path
from typing import Any, Callable

import torch

from rlrecipes.data.templates import render_prompt
from rlrecipes.display import format_duration, job_prefix
from rlrecipes.errors import UserError
from rlrecipes.generation import greedy_accuracy

SPECIALS = ["<|pad|>", "<|eos|>", "<|unk|>", "<|system|>", "<|user|>", "<|assistant|>"]
ALPHABET = list(string.ascii_letters + string.digits + string.punctuation + " \n")
CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'system' %}<|system|>{{ m['content'] }}"
    "{% elif m['role'] == 'user' %}<|user|>{{ m['content'] }}"
    "{% else %}<|assistant|>{{ m['content'] }}<|eos|>{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def build_tokenizer() -> Any:
    """A character-level tokenizer trained with `tokenizers` (BPE with no merges)."""
    from tokenizers import Tokenizer, decoders, models, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<|unk|>"))
    tok.decoder = decoders.Fuse()
    trainer = trainers.BpeTrainer(
        vocab_size=len(SPECIALS) + len(ALPHABET),
        special_tokens=SPECIALS,
        initial_alphabet=ALPHABET,
        show_progress=False,
    )
    tok.train_from_iterator(["".join(ALPHABET)], trainer=trainer)
    # padding_side must go through the constructor: an attribute set later is not saved.
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|eos|>",
        pad_token="<|pad|>",
        unk_token="<|unk|>",
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )


def build_model(cfg: Any, tokenizer: Any) -> Any:
    """A randomly initialised tiny causal LM (Qwen3 or Llama; never Qwen2, see DEVELOPERS)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM

    classes = {"qwen3": (Qwen3Config, Qwen3ForCausalLM), "llama": (LlamaConfig, LlamaForCausalLM)}
    if cfg.architecture not in classes:
        raise UserError(f"model.toy.architecture={cfg.architecture!r}; valid: {', '.join(classes)}")
    config_cls, model_cls = classes[cfg.architecture]
    config = config_cls(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.hidden_size // cfg.num_heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(cfg.seed)
    return model_cls(config)


def warm_start(model: Any, tokenizer: Any, task: Any, cfg: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Supervised warm-start on the task's (flawed) demonstrations until dev accuracy plateaus.

    Returns the learning curve; the model is left as it is at the plateau.
    """
    # One intra-op thread: for a model this small, thread hand-offs cost more than they
    # save, and with other processes on the machine two threads per process thrash.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _warm_start(model, tokenizer, task, cfg, log)
    finally:
        torch.set_num_threads(threads)


def warm_start_split(task: Any, tokenizer: Any, cfg: Any) -> tuple[list[dict], list[dict]]:
    """The warm-start's (dev, training) problems: the task's training problems whose prompt
    length lies within `cfg.sft_min_prompt_tokens` and `cfg.sft_max_prompt_tokens` (a null bound
    is none), the last `cfg.sft_dev_size` held back."""
    low, high = cfg.sft_min_prompt_tokens, cfg.sft_max_prompt_tokens
    items = task.train
    if low is not None or high is not None:
        floor = low if low is not None else 0
        ceiling = high if high is not None else float("inf")
        items = [it for it in items if floor <= len(_encode(tokenizer, it["problem"], as_prompt=True)) <= ceiling]
        if len(items) <= cfg.sft_dev_size:
            raise UserError(
                f"model.toy.sft_min_prompt_tokens={low}, sft_max_prompt_tokens={high}: {len(items)} of the task's "
                f"{len(task.train)} training problems have a prompt of that length, and the warm-start needs more "
                f"than model.toy.sft_dev_size={cfg.sft_dev_size}; widen the bounds or raise the task's num_train"
            )
    return items[-cfg.sft_dev_size :], items[: -cfg.sft_dev_size]


def _warm_start(model: Any, tokenizer: Any, task: Any, cfg: Any, log: Callable[[str], None]) -> dict[str, Any]:
    dev, sft_items = warm_start_split(task, tokenizer, cfg)
    rng = random.Random(cfg.seed)
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.sft_learning_rate, weight_decay=0.0)
    dev_prompts = [render_prompt(it["problem"], "chat", tokenizer) for it in dev]
    dev_answers = [it["answer"] for it in dev]
    decode_tokens = dev_decode_tokens(task, dev, tokenizer, cfg.sft_max_new_tokens)

    def dev_accuracy() -> float:
        return greedy_accuracy(model, tokenizer, dev_prompts, dev_answers, task.verify, max_new_tokens=decode_tokens)

    start = time.time()
    # Step 0, the untrained model: the plateau rule compares against it (see _plateaued).
    curve: list[dict[str, Any]] = [{"step": 0, "loss": None, "dev_accuracy": dev_accuracy(), "seconds": 0.0}]
    for step in range(1, cfg.sft_max_steps + 1):
        batch = rng.sample(sft_items, min(cfg.sft_batch_size, len(sft_items)))
        loss = _sft_loss(model, tokenizer, batch, task, rng)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % cfg.sft_eval_every == 0 or step == cfg.sft_max_steps:
            acc = dev_accuracy()
            curve.append(
                {
                    "step": step,
                    "loss": round(loss.item(), 4),
                    "dev_accuracy": acc,
                    "seconds": round(time.time() - start, 1),
                }
            )
            log(progress_line(step, cfg.sft_max_steps, loss.item(), f"dev accuracy {acc:.3f}", start))
            if _plateaued([c["dev_accuracy"] for c in curve], cfg.sft_patience, cfg.sft_tolerance):
                break
    plateau = _plateaued([c["dev_accuracy"] for c in curve], cfg.sft_patience, cfg.sft_tolerance)
    return {
        "curve": curve,
        "dev_accuracy": curve[-1]["dev_accuracy"],
        "untrained_dev_accuracy": curve[0]["dev_accuracy"],
        "plateaued": plateau,
        "steps": curve[-1]["step"],
    }


def progress_line(step: int, max_steps: int, loss: float, accuracy: str, started: float) -> str:
    """``warm-start step 300/4000 max: loss 0.452, dev accuracy 0.250, ETA ≤30m45s (2m10s elapsed)``:
    the total is a ceiling (the warm-start stops at its plateau), so is the ETA."""
    elapsed = time.time() - started
    eta = format_duration(elapsed / step * (max_steps - step))
    return (
        f"{job_prefix()}warm-start step {step}/{max_steps} max: loss {loss:.3f}, {accuracy}, "
        f"ETA ≤{eta} ({format_duration(elapsed)} elapsed)"
    )


def dev_decode_tokens(task: Any, dev: list[dict[str, Any]], tokenizer: Any, configured: int) -> int:
    """How many tokens the dev check decodes: `model.toy.sft_max_new_tokens`, but never fewer
    than the longest correct solution of the dev set and its end token. A shorter limit cuts
    every answer (a Countdown equation is ~18 characters, one token each here), dev accuracy
    stays 0, and the warm-start never sees its plateau."""
    longest = max((len(_encode(tokenizer, task.solution(it), as_prompt=False)) for it in dev), default=0)
    return max(configured, longest + 1)


def _plateaued(accuracies: list[float], patience: int, tolerance: float) -> bool:
    """True once the last `patience` + 1 dev accuracies lie within `tolerance` of each other
    and every one of them lies more than `tolerance` above `accuracies[0]`, the untrained model's.

    A window rather than "no new best": the flawed teacher makes accuracy rise and then
    fall as imitation sharpens, and stopping at the best point would hand RL a model
    that more SFT would still change. The rise: before the model has learned the answer
    format its accuracy sits flat near the untrained model's for hundreds of steps, a window
    the flatness test alone mistook for convergence (a default build once stopped at step 500
    with dev accuracy 0.02; trained on, it reaches about 0.3). A model that never rises trains
    to `sft_max_steps`.
    """
    untrained, window = accuracies[0], accuracies[1:][-(patience + 1) :]
    if len(window) < patience + 1:
        return False
    return max(window) - min(window) <= tolerance and min(window) > untrained + tolerance


def _sft_loss(model: Any, tokenizer: Any, batch: list[dict], task: Any, rng: random.Random) -> Any:
    """Cross-entropy on the demonstration tokens only (prompt tokens are masked out)."""
    prompts = [_encode(tokenizer, it["problem"], as_prompt=True) for it in batch]
    completions = [_encode(tokenizer, task.demonstration(it, rng), as_prompt=False) for it in batch]
    return completion_loss(model, tokenizer, prompts, completions)


def completion_loss(model: Any, tokenizer: Any, prompts: list[list[int]], completions: list[list[int]]) -> Any:
    """Token-mean cross-entropy on each completion and its end of sequence, the prompt tokens
    masked out, over a right-padded batch of token-id sequences."""
    seqs = [p + c + [tokenizer.eos_token_id] for p, c in zip(prompts, completions)]
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), tokenizer.pad_token_id)
    labels = torch.full((len(seqs), width), -100)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, (seq, prompt) in enumerate(zip(seqs, prompts)):
        ids[i, : len(seq)] = torch.tensor(seq)
        labels[i, len(prompt) : len(seq)] = torch.tensor(seq[len(prompt) :])
        attn[i, : len(seq)] = 1
    return model(input_ids=ids, attention_mask=attn, labels=labels).loss


_ENCODED: dict[tuple[int, str, bool], list[int]] = {}


def _encode(tokenizer: Any, text: str, as_prompt: bool) -> list[int]:
    """Token ids, memoised: the same few thousand prompts and answers recur every step."""
    key = (id(tokenizer), text, as_prompt)
    if key not in _ENCODED:
        rendered = render_prompt(text, "chat", tokenizer) if as_prompt else text
        _ENCODED[key] = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    return _ENCODED[key]


def build_toy(folder: Path, model_cfg: Any, task: Any, log: Callable[[str], None] = print) -> None:
    """Build, warm-start and save the toy model into `folder`."""
    tokenizer = build_tokenizer()
    model = build_model(model_cfg.toy, tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    log(f"building toy model ({n_params / 1e6:.2f}M parameters), warm-start on {task.name}")
    # a task whose demonstrations call tools brings its own warm-start (data/tool_task.py)
    report = (getattr(task, "warm_start", None) or warm_start)(model, tokenizer, task, model_cfg.toy, log)
    report["parameters"] = n_params
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / "warm_start.json").write_text(json.dumps(report, indent=2))

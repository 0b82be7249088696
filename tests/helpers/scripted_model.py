"""Models whose completions are written by the test, for end-to-end checks that must hold on
any machine.

A warm-started toy model is a chance outcome of its build: the same config learns a different
model on a CPU with other vector instructions (rounding differences grow through the
warm-start), and what it samples is a chance outcome again. An assertion that needs a right
answer, a wrong majority label or a group whose completions differ cannot rest on it. These
models have no chance in them:

- a one-layer Llama whose attention and MLP add nothing (their output projections are zero),
  so the logits at a position depend on that position's token alone: a bigram table;
- each token's scripted successor gets the logit `MARGIN`, every other token 0. In float32
  e^-1000 is 0, so the successor's probability is exactly 1 at any temperature up to 5:
  greedy decoding and sampling write the same completion, on every machine;
- a token may instead offer several successors at one logit: an exactly uniform choice (a
  test that needs completions to differ draws from it, and says how unlikely a batch without
  two different ones is);
- `margins` gives a token's successors a logit of their own (at least 200: still certain at
  temperature 1, but with another self-certainty), so that the completions of one choice
  differ in certainty.

With the chat template a prompt ends in <|assistant|>, so `chain("<|assistant|>", "Answer: 7")`
answers 7 to every problem; with `data.template=plain` a prompt ends in the problem's last
character, so problems ending in different letters can be answered differently.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Mapping, Sequence

ASSISTANT, EOS = "<|assistant|>", "<|eos|>"
MARGIN = 1000.0
HIDDEN = 128  # one dimension per token of the toy tokenizer (102 tokens)
RMS_EPS = 1e-6


def chain(start: str, text: str) -> dict[str, str]:
    """The bigram script that writes `text` after token `start`, then ends."""
    tokens = [start, *text, EOS]
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{text!r} after {start!r}: a bigram script needs every character once")
    return dict(zip(tokens[:-1], tokens[1:]))


def answering(answer: str) -> dict[str, str]:
    """A chat-template script: 'Answer: <answer>' to every prompt (the synthetic tasks' format)."""
    return chain(ASSISTANT, f"Answer: {answer}")


def lettered(problems: Sequence[tuple[str, str]], answers: Mapping[str, str], folder: Path) -> tuple[Path, Path]:
    """A jsonl of `(problem, gold)` rows whose problems end in a letter, and the model that answers
    each letter with `answers[letter]` (one character), for runs with `LETTERED_DATA`."""
    data = folder / "problems.jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"problem": p, "answer": a}) + "\n" for p, a in problems))
    return data, scripted_model(folder / "model", answers)


# the overrides (train or eval config) that read `lettered` data as plain prompts with bare answers
LETTERED_DATA = ["data.source=file", "data.template=plain", "data.answer_style=auto"]


def scripted_model(
    folder: Path, script: Mapping[str, str | Sequence[str]], margins: Mapping[str, float] | None = None
) -> Path:
    """Write a model folder (weights, config and the toy tokenizer) whose token after `t` is
    `script[t]` (one token, or a list drawn uniformly); after a token not in `script` it ends
    the completion. `margins[t]` replaces MARGIN for the successors of `t`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from rlrecipes.models.toy import build_tokenizer

    tokenizer = build_tokenizer()
    vocab = len(tokenizer)
    assert vocab <= HIDDEN
    ids = tokenizer.convert_tokens_to_ids
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=HIDDEN,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=4,  # head_dim 32: a shape vLLM's CPU attention runs too
        num_key_value_heads=4,
        max_position_embeddings=512,
        rms_norm_eps=RMS_EPS,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    # the final norm turns a one-hot hidden state into one of height 1 / sqrt(1/HIDDEN + eps)
    height = 1 / math.sqrt(1 / HIDDEN + RMS_EPS)
    head = torch.zeros(vocab, HIDDEN)
    for token in range(vocab):
        head[tokenizer.eos_token_id, token] = MARGIN / height
    for token, successors in script.items():
        successors = [successors] if isinstance(successors, str) else list(successors)
        margin = (margins or {}).get(token, MARGIN)
        if margin < 200 or len(set(successors)) != len(successors):
            raise ValueError(f"successors of {token!r}: distinct tokens with a margin of at least 200")
        row = ids(token)
        head[:, row] = 0.0
        for successor in successors:
            head[ids(successor), row] = margin / height
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()  # attention and MLP then add nothing to the residual stream
        model.model.embed_tokens.weight[:, :vocab] = torch.eye(vocab)
        for norm in (model.model.layers[0].input_layernorm, model.model.layers[0].post_attention_layernorm):
            norm.weight.fill_(1.0)
        model.model.norm.weight.fill_(1.0)
        model.lm_head.weight.copy_(head)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    return folder


def tagged_chain(start: str, text: str, tags: Sequence[str]) -> dict[str, str]:
    """`chain` for a `tagged_model`: each of `tags` in `text` is one token, every other character
    one token; every token once, as in `chain`."""
    import re

    pattern = "(" + "|".join(re.escape(tag) for tag in sorted(tags, key=len, reverse=True)) + ")"
    tokens = [start]
    for part in re.split(pattern, text):
        tokens.extend([part] if part in tags else list(part))
    tokens.append(EOS)
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{text!r} after {start!r}: a bigram script needs every token once")
    return dict(zip(tokens[:-1], tokens[1:]))


def tagged_model(
    folder: Path,
    script: Mapping[str, str | Sequence[str]],
    tags: Sequence[str],
    margins: Mapping[str, float] | None = None,
) -> Path:
    """`scripted_model` whose tokenizer has each of `tags` as one token (added to the toy's
    characters): a markup tag is then one step of the bigram table, so a script can write text
    whose characters repeat, such as "<answer>[[A]]</answer>" (3 tokens, see `tagged_chain`).
    The tokenizer is saved with the model, so a run reads the tags as the script writes them."""
    from rlrecipes.models import toy

    plain = toy.build_tokenizer

    def build_tokenizer():
        tokenizer = plain()
        tokenizer.add_tokens(list(tags))
        return tokenizer

    toy.build_tokenizer = build_tokenizer  # scripted_model imports it when it runs
    try:
        return scripted_model(folder, script, margins)
    finally:
        toy.build_tokenizer = plain

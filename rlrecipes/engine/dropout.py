"""Which settings make a model's forward random in training mode: dropout modules and the
dropout rates of its config (applied in the forward, without a module, by Llama's and Qwen's
attention). The policy-shift probe asks whether a training forward can stand for an eval pass;
the critic turns every rate off."""

from __future__ import annotations

from typing import Any

import torch


def is_dropout_rate(name: Any) -> bool:
    """Whether a config key holds a dropout probability: `*dropout*` (attention_dropout,
    classifier_dropout) or `*pdrop*` (GPT-2's resid_pdrop, attn_pdrop, embd_pdrop)."""
    return isinstance(name, str) and ("dropout" in name or "pdrop" in name)


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether a training forward of `model` is random: a dropout module with p > 0 (LoRA's
    lora_dropout, GPT-2's), or a config rate (`attention_dropout`, `*_pdrop`) applied functionally
    in the forward, as Llama's and Qwen's attention does."""
    if any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in model.modules()):
        return True
    configs = [m.config for m in model.modules() if hasattr(m, "config") and hasattr(m.config, "to_dict")]
    return any(_rates(config.to_dict()) for config in configs)


def _rates(values: dict[str, Any]) -> bool:
    for name, value in values.items():
        if isinstance(value, dict) and _rates(value):  # a composite model's text_config, vision_config
            return True
        if is_dropout_rate(name) and isinstance(value, float) and value > 0:
            return True
    return False

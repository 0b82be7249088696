"""From `rollout.*` settings to the tool rollout TRL is given as `rollout_func`.

`check_tool_rollout` runs with the other checks before anything loads (unknown tool, a
setting a tool does not have, a missing corpus, `max_turns=0`: one line each);
`tool_rollout_from_config` builds the tools (loads a corpus, probes the sandbox) when
the trainer is built.
"""

from __future__ import annotations

from typing import Any

from rlrecipes.engine.tool_rollout import ToolRollout, ToolRolloutSettings
from rlrecipes.errors import ConfigError
from rlrecipes.tools import build_tools, tool_names, tool_options


def check_tool_rollout(cfg: Any) -> None:
    """ConfigError for the first unusable `rollout.*` tool setting of train config `cfg`."""
    rollout = cfg.rollout
    names = list(rollout.get("tools") or [])
    options = dict(rollout.get("tool_kwargs") or {})
    if not names:
        if options:
            raise ConfigError(f"rollout.tool_kwargs.{sorted(options)[0]} is set but rollout.tools is empty")
        return
    known = tool_names()
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown tool {name!r} (rollout.tools); valid: {', '.join(known)}")
    if len(set(names)) < len(names):
        raise ConfigError(f"rollout.tools={names} names a tool twice")
    for key, low in (("max_turns", 1), ("max_tool_result_tokens", 1)):
        if rollout[key] < low:
            raise ConfigError(
                f"rollout.{key}={rollout[key]} must be at least {low} when rollout.tools is set"
                + (
                    " (0 turns would never call a tool; use rollout.tools=[] for single-turn)"
                    if key == "max_turns"
                    else ""
                )
            )
    if not rollout.tool_timeout_s > 0:
        raise ConfigError(f"rollout.tool_timeout_s={rollout.tool_timeout_s} must be positive")
    if not rollout.answer_close:
        raise ConfigError("rollout.answer_close must not be empty (it ends a rollout's answer)")
    stray = sorted(set(options) - set(names))
    if stray:
        raise ConfigError(f"rollout.tool_kwargs.{stray[0]} is set but {stray[0]!r} is not in rollout.tools={names}")
    for name in names:
        chosen = tool_options(name, options.get(name))
        for tag in ("open", "close"):
            if not getattr(chosen, tag, ""):
                raise ConfigError(f"rollout.tool_kwargs.{name}.{tag} must not be empty")
        if "{}" not in chosen.wrap:
            raise ConfigError(f"rollout.tool_kwargs.{name}.wrap={chosen.wrap!r} has no {{}} for the result")


def settings_from_config(cfg: Any) -> ToolRolloutSettings:
    r = cfg.rollout
    return ToolRolloutSettings(
        max_turns=r.max_turns,
        max_completion_tokens=cfg.trainer.max_completion_length,
        max_result_tokens=r.max_tool_result_tokens,
        timeout_s=r.tool_timeout_s,
        answer_close=r.answer_close,
        mask_tool_output=r.mask_tool_output,
    )


def tool_rollout_from_config(cfg: Any, tokenizer: Any) -> ToolRollout | None:
    """The rollout for `rollout.tools`, or None (single-turn: TRL's own generation)."""
    names = list(cfg.rollout.get("tools") or [])
    if not names:
        return None
    check_tool_rollout(cfg)
    options = {k: dict(v) for k, v in dict(cfg.rollout.get("tool_kwargs") or {}).items()}
    return ToolRollout(build_tools(names, options), settings_from_config(cfg), tokenizer)


def rollout_kwargs(cfg: Any, tokenizer: Any) -> dict[str, Any]:
    """What `RecipeGRPOTrainer(...)` gets for the tool rollout: `rollout_func=` or nothing."""
    rollout = tool_rollout_from_config(cfg, tokenizer)
    return {} if rollout is None else {"rollout_func": rollout}

"""From `rollout.*` settings to the tool rollout TRL is given as `rollout_func`.

`check_tool_rollout` runs with the other checks before anything loads (unknown tool, a
setting a tool does not have, a missing corpus, `max_turns=0`: one line each);
`tool_rollout_from_config` builds the tools (loads a corpus, probes the sandbox) when
the trainer is built. The same settings (`ToolLoopConfig`) drive `rlrecipes eval`'s tool
loop (`tool_rollout_for`, with the benchmark's token budget).

`rollout.tool_mode` says how the tools are used, with one rollout machinery for all three,
so the controls differ from the tool runs only in the tool:
- `loop`: the model calls them while it writes;
- `rag_once`: the one tool is called once with the question before the model writes, its
  wrapped result put after the prompt (`retrieve_once`), and the rollout has no tool turn
  (Search-R1's RAG baseline, inference-only in the paper; trained too in `bench_tools`);
- `off`: no tool turn (the no-tool control; a tool call the model writes is plain text).
"""

from __future__ import annotations

from typing import Any, Callable

from rlrecipes.errors import ConfigError
from rlrecipes.tool_loop.rollout import ToolRollout, ToolRolloutSettings, cap_chars
from rlrecipes.tools import build_tools, call_tool, tool_names, tool_options

Retrieve = Callable[[str, str], str]  # (rendered prompt, question) -> the prompt the model continues


# the tool-loop settings that mean nothing without a tool (null when unset)
TOOL_ONLY = ("max_tool_result_chars", "max_turn_tokens", "invalid_action_note")


def check_tool_rollout(cfg: Any) -> None:
    """ConfigError for the first unusable `rollout.*` tool setting of train config `cfg`."""
    check_tools(cfg.rollout)
    cap, budget = cfg.rollout.get("max_turn_tokens"), cfg.trainer.max_completion_length
    if cap is not None and cap > budget:
        raise ConfigError(
            f"rollout.max_turn_tokens={cap} is above trainer.max_completion_length={budget}, the whole rollout's "
            "budget, so it could never cut a turn; lower it or set it to null"
        )


def check_tools(rollout: Any) -> None:
    """ConfigError for the first unusable tool setting of a `ToolLoopConfig` node."""
    names = list(rollout.get("tools") or [])
    options = dict(rollout.get("tool_kwargs") or {})
    mode = str(rollout.get("tool_mode", "loop"))
    if not names:
        if options:
            raise ConfigError(f"rollout.tool_kwargs.{sorted(options)[0]} is set but rollout.tools is empty")
        if mode != "loop":
            raise ConfigError(f"rollout.tool_mode={mode} needs a tool in rollout.tools")
        if rollout.get("void_turn_masking", False):
            raise ConfigError(
                "rollout.void_turn_masking=true needs a tool in rollout.tools (void turns are tool-loop turns)"
            )
        for key in TOOL_ONLY:
            if rollout.get(key) is not None:
                raise ConfigError(f"rollout.{key} is set but rollout.tools is empty (it is a tool-loop setting)")
        return
    known = tool_names()
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown tool {name!r} (rollout.tools); valid: {', '.join(known)}")
    if len(set(names)) < len(names):
        raise ConfigError(f"rollout.tools={names} names a tool twice")
    if mode == "rag_once" and len(names) != 1:
        raise ConfigError(f"rollout.tool_mode=rag_once calls one tool with the question; rollout.tools={names}")
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
    for key in ("max_tool_result_chars", "max_turn_tokens"):
        value = rollout.get(key)
        if value is not None and value < 1:
            raise ConfigError(f"rollout.{key}={value} must be at least 1 (null: no cap)")
    note = rollout.get("invalid_action_note")
    if note is not None and not str(note).strip():
        raise ConfigError(
            f"rollout.invalid_action_note={note!r} is empty: set the text the model reads after an invalid turn, "
            "or null to end the rollout there"
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
        wall_s = getattr(chosen, "wall_s", None)  # a tool with a wall limit of its own (python)
        if wall_s is not None and rollout.tool_timeout_s < wall_s:
            raise ConfigError(
                f"rollout.tool_timeout_s={rollout.tool_timeout_s:g} ends before tool {name!r}'s own wall limit "
                f"(rollout.tool_kwargs.{name}.wall_s={wall_s:g}): a call would be given up while its program "
                f"runs; set rollout.tool_timeout_s>={wall_s:g} or lower wall_s"
            )


def settings_for(rollout: Any, max_completion_tokens: int) -> ToolRolloutSettings:
    return ToolRolloutSettings(
        max_turns=rollout.max_turns if str(rollout.get("tool_mode", "loop")) == "loop" else 0,
        max_completion_tokens=max_completion_tokens,
        max_result_tokens=rollout.max_tool_result_tokens,
        timeout_s=rollout.tool_timeout_s,
        answer_close=rollout.answer_close,
        mask_tool_output=rollout.mask_tool_output,
        void_turn_masking=bool(rollout.get("void_turn_masking", False)),  # training only (RolloutConfig)
        answer_mark=rollout.get("answer_mark", ""),
        max_turn_tokens=rollout.get("max_turn_tokens"),
        max_result_chars=rollout.get("max_tool_result_chars"),
        invalid_action_note=rollout.get("invalid_action_note"),
    )


def settings_from_config(cfg: Any) -> ToolRolloutSettings:
    return settings_for(cfg.rollout, cfg.trainer.max_completion_length)


def _built_tools(rollout: Any) -> list:
    options = {k: dict(v) for k, v in dict(rollout.get("tool_kwargs") or {}).items()}
    return build_tools(list(rollout.tools), options)


def tool_rollout_for(rollout: Any, tokenizer: Any, max_completion_tokens: int) -> ToolRollout | None:
    """The rollout for a `ToolLoopConfig` node, or None (no tools: single-turn generation)."""
    if not list(rollout.get("tools") or []):
        return None
    check_tools(rollout)
    return ToolRollout(_built_tools(rollout), settings_for(rollout, max_completion_tokens), tokenizer)


def tool_rollout_from_config(cfg: Any, tokenizer: Any) -> ToolRollout | None:
    """The rollout for `rollout.tools`, or None (single-turn: TRL's own generation)."""
    return tool_rollout_for(cfg.rollout, tokenizer, cfg.trainer.max_completion_length)


def rollout_kwargs(cfg: Any, tokenizer: Any) -> dict[str, Any]:
    """What `RecipeGRPOTrainer(...)` gets for the tool rollout: `rollout_func=` or nothing."""
    rollout = tool_rollout_from_config(cfg, tokenizer)
    return {} if rollout is None else {"rollout_func": rollout}


def retrieve_once(rollout: Any, tokenizer: Any) -> Retrieve | None:
    """`rollout.tool_mode=rag_once`: a function putting the tool's result for the question,
    wrapped as in the loop and cut to `rollout.max_tool_result_chars` characters and
    `rollout.max_tool_result_tokens` tokens, after a rendered prompt; None in the other modes.
    A failed call's error text is what the model reads, as in the loop."""
    if str(rollout.get("tool_mode", "loop")) != "rag_once" or not list(rollout.get("tools") or []):
        return None
    check_tools(rollout)
    [tool] = _built_tools(rollout)
    before, _, after = tool.wrap.partition("{}")

    def retrieve(prompt: str, question: str) -> str:
        text = cap_chars(call_tool(tool, question, rollout.tool_timeout_s).text, rollout.get("max_tool_result_chars"))
        ids = tokenizer.encode(text, add_special_tokens=False)[: rollout.max_tool_result_tokens]
        return prompt + before + tokenizer.decode(ids, skip_special_tokens=True) + after

    return retrieve

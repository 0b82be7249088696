"""Tools a model may call while it generates (the multi-turn rollout, tool_loop/rollout.py).

A tool is data: the tags the model writes around a call (`<search>query</search>`), the
template its result is appended in (`<information>...</information>`, Search-R1), and a
function from the call's text to the result's text. Names map to factories here
(`@register_tool`), so `rollout.tools=[search]` is all a recipe or a user writes; each
tool's settings come from `rollout.tool_kwargs.<name>` and are checked before anything
loads (an unknown setting is one line naming the valid ones).

Calling a tool never raises into the rollout: an exception or a timeout becomes text the
model reads (`call_tool`), and is counted as a tool error.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping

from rlrecipes.errors import ConfigError


@dataclass(frozen=True)
class ToolSpec:
    name: str
    open: str  # the tag that starts a call, e.g. "<search>"
    close: str  # the tag that ends it: generation stops there and the tool runs
    wrap: str  # the result as appended to the context; "{}" is the tool's output
    run: Callable[[str], str]  # the call's text -> the result's text (may raise: see call_tool)


class ToolFailure(Exception):
    """Raised by a tool whose call failed in a way the model should read (a refused
    expression, a program that crashed); its message is the text the model sees."""


@dataclass(frozen=True)
class ToolResult:
    text: str
    error: bool  # raised, timed out or refused: counted in tools/error_rate


@dataclass(frozen=True)
class _Registered:
    factory: Callable[[Any], ToolSpec]
    options: type  # dataclass of the tool's settings (rollout.tool_kwargs.<name>)


_REGISTRY: dict[str, _Registered] = {}


def register_tool(name: str, options: type) -> Callable:
    """Register `factory(options_instance) -> ToolSpec` under `name`."""

    def decorate(factory: Callable[[Any], ToolSpec]) -> Callable[[Any], ToolSpec]:
        _REGISTRY[name] = _Registered(factory, options)
        return factory

    return decorate


def tool_names() -> list[str]:
    _import_builtin_tools()
    return sorted(_REGISTRY)


def tool_options(name: str, given: Mapping[str, Any] | None) -> Any:
    """The settings dataclass of tool `name`, filled from `given` (rollout.tool_kwargs.<name>)."""
    _import_builtin_tools()
    cls = _REGISTRY[name].options
    valid = [f.name for f in fields(cls)]
    unknown = sorted(set(given or {}) - set(valid))
    if unknown:
        raise ConfigError(
            f"rollout.tool_kwargs.{name}.{unknown[0]} is not a setting of tool {name!r}; valid: {', '.join(valid)}"
        )
    return cls(**dict(given or {}))


def build_tools(names: list[str], options: Mapping[str, Any] | None = None) -> list[ToolSpec]:
    """The tools named in `rollout.tools`, with their settings; a one-line ConfigError for an
    unknown name, an unknown setting, settings for a tool not in the list, or two tools
    sharing a closing tag (the rollout could not tell which one was called)."""
    known = tool_names()
    options = dict(options or {})
    for name in names:
        if name not in known:
            raise ConfigError(f"unknown tool {name!r} (rollout.tools); valid: {', '.join(known)}")
    stray = sorted(set(options) - set(names))
    if stray:
        raise ConfigError(
            f"rollout.tool_kwargs.{stray[0]} is set but {stray[0]!r} is not in rollout.tools={list(names)}"
        )
    specs = [_REGISTRY[name].factory(tool_options(name, options.get(name))) for name in names]
    closes = [spec.close for spec in specs]
    for spec in specs:
        if not spec.open or not spec.close:
            raise ConfigError(f"tool {spec.name!r}: rollout.tool_kwargs.{spec.name}.open/close must not be empty")
        if closes.count(spec.close) > 1:
            raise ConfigError(f"two tools in rollout.tools share the closing tag {spec.close!r}; give each its own")
    return specs


CANCEL_GRACE_S = 10.0  # how long a given-up call may take to stop its process before it is left


_CALL = threading.local()


def cancellation() -> threading.Event | None:
    """The event set when the caller of the tool call running in this thread gives up on it
    (call_tool's timeout): a tool that runs a process (the python tool's sandbox) kills it
    then, so no call outlives its caller. None outside call_tool."""
    return getattr(_CALL, "cancel", None)


def call_tool(tool: ToolSpec, query: str, timeout_s: float) -> ToolResult:
    """Run `tool` on `query`; an exception or a run past `timeout_s` seconds becomes error text.

    The call runs in a daemon thread. Past `timeout_s` its cancellation event is set and the
    call gets CANCEL_GRACE_S to stop: a tool with a process (tools/sandbox.py) kills it and
    returns, so untrusted code never runs on after its call. A plain Python function cannot be
    stopped from outside, so a hung one is then abandoned (it cannot hold up the run or its exit).
    """
    box: dict[str, Any] = {}
    cancel = threading.Event()

    def target() -> None:
        _CALL.cancel = cancel
        try:
            box["text"] = str(tool.run(query))
        except ToolFailure as exc:
            box["error"] = str(exc)
        except Exception as exc:  # any failure of the tool is the model's to read, not the run's
            box["error"] = f"{type(exc).__name__}: {exc}"

    thread = threading.Thread(target=target, name=f"tool-{tool.name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        cancel.set()
        thread.join(CANCEL_GRACE_S)
        return ToolResult(f"error: {tool.name} timed out after {timeout_s:g} s", True)
    if "error" in box:
        return ToolResult(f"error: {box['error']}", True)
    return ToolResult(box["text"], False)


def _import_builtin_tools() -> None:
    """Import every module of this package once, so each `@register_tool` has run."""
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")

"""Reward functions: plain, typed callables with TRL's reward-function contract.

A reward function receives one entry per completion:
`fn(prompts: list[str], completions: list[str], answer: list[str | None], **columns)`
and returns `list[float | None]` (None = "does not apply", TRL excludes it).

Recipes refer to rewards by name (`recipe.rewards: [{name: accuracy, weight: 1}]`);
a factory registered here turns the name plus a `RewardContext` into the callable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from rlrecipes.errors import UserError

RewardFn = Callable[..., list]
Verifier = Callable[[str, Any], bool]


@dataclass
class RewardContext:
    """What reward factories may need to know about the run."""

    verify: Verifier  # (completion text, gold answer) -> correct?
    answer_style: str = "auto"
    max_completion_length: int = 512
    seed: int = 0
    params: Mapping[str, Any] = field(default_factory=dict)  # the recipe's config node
    options: Mapping[str, Any] = field(default_factory=dict)  # this reward's `options` (its RewardSpec)
    run_dir: Any = None  # the run directory (rewards that keep a log there), or None


RewardFactory = Callable[[RewardContext], RewardFn]
_FACTORIES: dict[str, RewardFactory] = {}
_ANSWER_FREE: set[str] = set()  # rewards that never read the gold `answer` column


def register_reward(name: str, *, needs_answer: bool = True) -> Callable[[RewardFactory], RewardFactory]:
    """Register a reward factory under `name`; `needs_answer=False` marks a reward that
    can train on unlabelled data (it never reads the gold `answer` column)."""

    def decorate(factory: RewardFactory) -> RewardFactory:
        _FACTORIES[name] = factory
        if not needs_answer:
            _ANSWER_FREE.add(name)
        return factory

    return decorate


def needs_answer(name: str) -> bool:
    """Whether the reward `name` grades against the gold answer."""
    _load_builtin()
    return name not in _ANSWER_FREE


def reward_names() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def build_reward(name: str, ctx: RewardContext) -> RewardFn:
    _load_builtin()
    if name not in _FACTORIES:
        raise UserError(f"unknown reward {name!r} (recipe.rewards); valid: {', '.join(sorted(_FACTORIES))}")
    fn = _FACTORIES[name](ctx)
    fn.__name__ = name  # TRL logs rewards/<__name__>/mean
    return fn


def _load_builtin() -> None:
    # Imported lazily so `rlrecipes.rewards` stays importable without torch.
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")


def __getattr__(name: str) -> Any:
    # Public formula functions live in submodules; expose them at package level
    # (`rlrecipes.rewards.overlong_penalty`) without importing torch eagerly.
    _public = {
        "accuracy_reward": "accuracy",
        "overlong_penalty": "overlong",
        "dapo_score": "dapo",
        "minerva_normalize": "dapo",
        "self_certainty": "certainty",
        "format_reward": "spurious",
        "random_rewards": "spurious",
        "vote_rewards": "majority",
    }
    if name in _public:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_public[name]}"), name)
    raise AttributeError(name)

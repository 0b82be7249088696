"""Reward functions: plain, typed callables with TRL's reward-function contract.

A completion reward receives one entry per completion:
`fn(prompts: list[str], completions: list[str], answer: list[str | None], **columns)`
and returns `list[float | None]` (None = "does not apply", TRL excludes it).

A group reward (`scope="group"`) scores whole groups at once, because what one completion
earns depends on the others of its prompt (TTRL's majority vote, J1's position
consistency): `fn(groups: Sequence[CompletionGroup], log) -> list[list[float]]`. The engine gathers
every process's completions so each group is whole (`rlrecipes.engine.group_rewards`).

Recipes refer to rewards by name (`recipe.rewards: [{name: accuracy, weight: 1}]`); a
factory registered here turns the name plus a `RewardContext` into the callable. A reward
that reads settings declares them as a dataclass (`params=`): `build_reward` fills it from
the reward's `options` in `recipe.rewards`, then from the recipe's fields of the same name,
so a factory reads `ctx.params.gamma` (typed), and a missing or mistyped setting is one line
before anything loads.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from rlrecipes.errors import UserError

RewardFn = Callable[..., list]
Verifier = Callable[[str, Any], bool]
MetricLog = Callable[[str, float], None]


@dataclass(frozen=True)
class CompletionGroup:
    """One prompt's completions with their dataset columns (one entry per completion)."""

    prompt: Any
    completions: list[str]
    columns: dict[str, list[Any]]


GroupRewardFn = Callable[[Sequence[CompletionGroup], MetricLog], list[list[float]]]


@dataclass(frozen=True)
class GroupReward:
    """A built group-level reward: its name (TRL's column) and its scoring function."""

    name: str
    score: GroupRewardFn

    @property
    def __name__(self) -> str:  # noqa: PLW3201 (named like a function's, as TRL and the recipes read it)
        return self.name


@dataclass
class RewardContext:
    """What reward factories may need to know about the run."""

    verify: Verifier  # (completion text, gold answer) -> correct?
    answer_style: str = "auto"
    max_completion_length: int = 512
    seed: int = 0
    recipe: Any = None  # the recipe's config: declared params are read from its fields
    options: Mapping[str, Any] = field(default_factory=dict)  # this reward's `options` (its RewardSpec)
    run_dir: Any = None  # the run directory (rewards that keep a log there), or None
    params: Any = None  # this reward's declared params (a dataclass instance), set by build_reward


RewardFactory = Callable[[RewardContext], "RewardFn | GroupRewardFn"]


@dataclass(frozen=True)
class _Registered:
    factory: RewardFactory
    needs_answer: bool
    scope: str  # "completion" | "group"
    params: type | None


_REGISTRY: dict[str, _Registered] = {}
SCOPES = ("completion", "group")


def register_reward(
    name: str, *, needs_answer: bool = True, scope: str = "completion", params: type | None = None
) -> Callable[[RewardFactory], RewardFactory]:
    """Register a reward factory under `name`.

    `needs_answer=False` marks a reward that can train on unlabelled data (it never reads
    the gold `answer` column); `scope="group"` a reward that scores whole groups; `params`
    the dataclass of settings it reads (`ctx.params`)."""
    if scope not in SCOPES:
        raise ValueError(f"reward {name!r}: scope {scope!r}; valid: {', '.join(SCOPES)}")
    if params is not None and not is_dataclass(params):
        raise TypeError(f"reward {name!r}: params must be a dataclass, got {params!r}")

    def decorate(factory: RewardFactory) -> RewardFactory:
        known = _REGISTRY.get(name)
        where = f"{factory.__module__}.{factory.__qualname__}"
        if known is not None and f"{known.factory.__module__}.{known.factory.__qualname__}" != where:
            # a second reward of the same name would silently replace the first (a re-import
            # of the same module re-registers the same factory, which is fine)
            raise ValueError(
                f"reward {name!r} is registered twice: {known.factory.__module__}.{known.factory.__qualname__} and {where}"
            )
        _REGISTRY[name] = _Registered(factory, needs_answer, scope, params)
        return factory

    return decorate


def _registered(name: str) -> _Registered:
    _load_builtin()
    if name not in _REGISTRY:
        raise UserError(f"unknown reward {name!r} (recipe.rewards); valid: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]


def needs_answer(name: str) -> bool:
    """Whether the reward `name` grades against the gold answer."""
    return _registered(name).needs_answer


def reward_scope(name: str) -> str:
    """ "completion" or "group" (scored on whole groups, see the module doc)."""
    return _registered(name).scope


def reward_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def reward_params(name: str, recipe: Any = None, options: Mapping[str, Any] | None = None) -> Any:
    """The declared params of reward `name` from its `options`, then the recipe's fields
    (None for a reward that declares none); a one-line error for an unknown option, a
    missing setting or a value of the wrong type."""
    cls = _registered(name).params
    options = dict(options or {})
    if cls is None:
        if options:
            raise UserError(f"reward {name!r} takes no options (got {', '.join(sorted(options))})")
        return None
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise UserError(f"reward {name!r}: unknown option(s) {', '.join(unknown)}; valid: {', '.join(known)}")
    values: dict[str, Any] = {}
    for key, spec in known.items():
        if key in options:
            values[key] = options[key]
        elif recipe is not None and _has(recipe, key):
            values[key] = _get(recipe, key)
        elif spec.default is MISSING and spec.default_factory is MISSING:
            raise UserError(f"reward {name!r} needs {key!r}: set recipe.{key} or the reward's options.{key}")
    params = cls(**values)
    for key, value in values.items():
        _check_type(name, key, value, known[key].type)
    return params


def _has(recipe: Any, key: str) -> bool:
    return key in recipe if isinstance(recipe, Mapping) or hasattr(recipe, "keys") else hasattr(recipe, key)


def _get(recipe: Any, key: str) -> Any:
    return recipe[key] if isinstance(recipe, Mapping) or hasattr(recipe, "keys") else getattr(recipe, key)


_TYPES = {"float": (int, float), "int": (int,), "str": (str,), "bool": (bool,)}


def _check_type(name: str, key: str, value: Any, annotation: Any) -> None:
    """Plain scalar annotations are checked; Optional/containers are left to the factory."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    allowed = _TYPES.get(text)
    if allowed is not None and (not isinstance(value, allowed) or (text != "bool" and isinstance(value, bool))):
        raise UserError(f"reward {name!r}: {key}={value!r} must be a {text}")


def build_reward(name: str, ctx: RewardContext) -> RewardFn | GroupReward:
    """The reward `name` for this run: a TRL reward function, or a `GroupReward`."""
    entry = _registered(name)
    ctx = replace(ctx, params=reward_params(name, ctx.recipe, ctx.options))
    fn = entry.factory(ctx)
    if entry.scope == "group":
        return GroupReward(name, fn)
    fn.__name__ = name  # TRL logs rewards/<__name__>/mean
    return fn


def _load_builtin() -> None:
    # Imported lazily so `rlrecipes.rewards` stays importable without torch.
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")

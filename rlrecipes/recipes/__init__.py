"""Recipe registry: a recipe registers itself with `@register_recipe`; nothing else lists it."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from rlrecipes.errors import ConfigError

if TYPE_CHECKING:
    from rlrecipes.recipes.base import Recipe

REGISTRY: dict[str, type[Recipe]] = {}


def register_recipe(cls: type[Recipe]) -> type[Recipe]:
    """Class decorator adding a recipe to the registry under `cls.name`."""
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"recipe name {cls.name!r} is registered twice")
    REGISTRY[cls.name] = cls
    return cls


def load_all() -> dict[str, type[Recipe]]:
    """Import every module of this package so their decorators run; return the registry."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_") and info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


def get_recipe(name: str) -> type[Recipe]:
    """The recipe registered as `name` (`recipe.name`); one line naming the valid ones otherwise."""
    recipes = load_all()
    if name not in recipes:
        raise ConfigError(
            f"recipe.name={name!r}: unknown recipe; valid: {', '.join(sorted(recipes))} (choose one with recipe=NAME)"
        )
    return recipes[name]

"""Configuration: the typed schemas and the value rules types cannot express. Composing a
command line into a config is `rlrecipes.compose`, a layer above (it registers the recipes')."""

from rlrecipes.errors import ConfigError

__all__ = ["ConfigError"]

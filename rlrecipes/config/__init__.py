"""Configuration: typed schema, ConfigStore registration and Hydra entry points."""

from rlrecipes.config.compose import compose_config, conf_dir
from rlrecipes.errors import ConfigError

__all__ = ["ConfigError", "compose_config", "conf_dir"]

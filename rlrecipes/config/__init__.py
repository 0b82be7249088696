"""Configuration: typed schema, ConfigStore registration and Hydra entry points."""

from rlrecipes.config.compose import ConfigError, compose_config, conf_dir

__all__ = ["ConfigError", "compose_config", "conf_dir"]

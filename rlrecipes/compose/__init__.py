"""Hydra composition: the ConfigStore with every schema, composing a command line into a
config (`compose_config`), and running a command's job under `@hydra.main` (`run_hydra`).
It sits above the recipes and the evaluation, whose schemas it registers."""

from rlrecipes.compose.compose import compose_config, conf_dir, eval_config_for

__all__ = ["compose_config", "conf_dir", "eval_config_for"]

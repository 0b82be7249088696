"""Register the typed schemas in Hydra's ConfigStore.

YAML files in `conf/<group>/` start with `defaults: [<group>_schema, _self_]`, so the
YAML values are merged *into* the dataclass and unknown keys are rejected. Each
recipe's schema is registered as `recipe/<name>_schema` straight from the registry.
"""

from __future__ import annotations

from hydra.core.config_store import ConfigStore

from rlrecipes.config import schema

_registered = False


def register_configs() -> None:
    global _registered
    if _registered:
        return
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=schema.TrainConfig)
    cs.store(name="sft_schema", node=schema.SFTRunConfig)
    cs.store(name="stages_schema", node=schema.StagesRunConfig)
    cs.store(group="pipeline", name="pipeline_schema", node=schema.PipelineConfig)
    cs.store(group="model", name="model_schema", node=schema.ModelConfig)
    cs.store(group="data", name="data_schema", node=schema.DataConfig)
    cs.store(group="trainer", name="trainer_schema", node=schema.TrainerConfig)
    cs.store(group="rollout", name="rollout_schema", node=schema.RolloutConfig)

    # Local imports, on purpose: the recipes' schemas live next to their code, a layer above
    # this package (which they import for RecipeConfig), and the eval schema lists the
    # registered benchmarks; both are read when a config is first composed, never at import.
    from rlrecipes.eval import config as eval_schema
    from rlrecipes.recipes import load_all

    for name, recipe_cls in load_all().items():
        cs.store(group="recipe", name=f"{name}_schema", node=recipe_cls.config_cls)
    eval_schema.register(cs)
    _registered = True

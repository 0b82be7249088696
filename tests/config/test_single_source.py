"""Every value has one home: the schema dataclasses hold the defaults, and a YAML in
`conf/<group>/` (or the root `train.yaml` / `eval.yaml`) holds only the values in which its
option differs from them. A value stated twice drifts: `trainer.max_completion_length`
once said 12 in the schema and 16 in `conf/trainer/cpu.yaml`.

Outside this rule: the paper presets (`conf/experiment/`), global deltas over whole
composed configs; the reward options (`conf/reward/`), which replace whichever recipe's
rewards were chosen (`reward=ground_truth` on DAPO swaps `dapo_answer` for `accuracy`);
and the Slurm launchers (`conf/hydra/`), which have no schema of ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf

from rlrecipes.compose import compose_config, conf_dir
from rlrecipes.compose.store import register_configs

GROUPS = ("recipe", "trainer", "model", "data", "rollout", "protocol", "benchmark")
ROOTS = {"train.yaml": "train_schema", "eval.yaml": "eval_schema"}


def _files() -> list[Path]:
    root = conf_dir()
    return [root / name for name in ROOTS] + sorted(p for g in GROUPS for p in (root / g).glob("*.yaml"))


def _schema(name: str, group: str | None) -> DictConfig:
    register_configs()
    path = f"{group}/{name}.yaml" if group else f"{name}.yaml"
    return OmegaConf.create(ConfigStore.instance().load(path).node)


def base_of(path: Path) -> DictConfig:
    """What the YAML's own defaults list gives before its body is merged: its schema node,
    or the composed option it extends (`model/toy_vllm.yaml` extends `model/toy.yaml`)."""
    if path.name in ROOTS and path.parent == conf_dir():
        return _schema(ROOTS[path.name], None)
    group = path.parent.name
    (parent,) = [d for d in OmegaConf.load(path).defaults if isinstance(d, str) and d != "_self_"]
    parent, _, package = parent.partition("@")  # a `# @package _global_` option: protocol_schema@protocol
    if parent.endswith("_schema"):
        schema = _schema(parent, group)
        return OmegaConf.create({package: schema}) if package else schema
    return OmegaConf.merge(base_of(path.parent / f"{parent}.yaml"), body_of(path.parent / f"{parent}.yaml"))


def body_of(path: Path) -> DictConfig:
    body = OmegaConf.load(path)
    for key in ("defaults", "hydra"):  # hydra: Hydra's own settings, no schema of ours
        body.pop(key, None)
    return body


def restated(path: Path) -> list[str]:
    """`key=value` for every value the YAML sets to what its base already has."""
    base = base_of(path)
    merged = OmegaConf.merge(base, body_of(path))  # through the schema's types: 2.0e-4 == 0.0002, "bnpo" == bnpo

    def plain(cfg: DictConfig) -> Any:
        return OmegaConf.to_container(cfg, resolve=False, enum_to_str=True)

    found: list[str] = []

    def walk(body: Any, was: Any, now: Any, prefix: str) -> None:
        for key, value in body.items():
            if not isinstance(was, dict) or key not in was:
                continue  # a key the base lacks (an added dict entry) restates nothing
            if isinstance(value, dict) and isinstance(was[key], dict):
                walk(value, was[key], now[key], f"{prefix}{key}.")
            elif now[key] == was[key]:
                found.append(f"{prefix}{key}={now[key]!r}")

    walk(OmegaConf.to_container(body_of(path), resolve=False), plain(base), plain(merged), "")
    return found


@pytest.mark.parametrize("path", _files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_yaml_sets_only_values_its_schema_does_not_already_have(path):
    duplicates = restated(path)
    assert not duplicates, (
        f"{path.relative_to(conf_dir().parent)} restates its schema's defaults: {', '.join(duplicates)} "
        "(keep each value in one place: drop these lines, or change the default in the dataclass)"
    )


def test_a_restated_default_is_found(tmp_path):
    """The check itself: a copy of conf/trainer/cpu.yaml that re-adds a default is caught."""
    copy = tmp_path / "trainer" / "cpu.yaml"
    copy.parent.mkdir()
    text = (conf_dir() / "trainer" / "cpu.yaml").read_text()
    assert restated_text(copy, text) == []
    again = restated_text(copy, text + "max_steps: 120\nlearning_rate: 2.0e-4\n")
    assert again == ["max_steps=120", "learning_rate=0.0002"]
    nested = restated_text(copy, text + "lr_scheduler_kwargs: {min_lr_rate: 0.1}\n")
    assert nested == []  # a new entry of a free-form dict is a value of its own


def restated_text(path: Path, text: str) -> list[str]:
    path.write_text(text)
    return restated(path)


def test_toy_vllm_is_compared_with_the_toy_it_extends(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("toy.yaml", "toy_vllm.yaml"):
        (folder / name).write_text((conf_dir() / "model" / name).read_text())
    assert restated(folder / "toy_vllm.yaml") == []
    with (folder / "toy_vllm.yaml").open("a") as f:
        f.write("builder: toy\n")  # toy.yaml already says so
    assert restated(folder / "toy_vllm.yaml") == ["builder='toy'"]


def test_contributings_example_recipe_yaml_states_only_how_it_differs_from_grpo(tmp_path):
    """The YAML a contributor copies from CONTRIBUTING.md passes this file's rule (it once restated
    GRPO's reward list)."""
    text = (conf_dir().parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    (example,) = [block for block in text.split("```yaml\n")[1:] if "conf/recipe/my_recipe.yaml" in block]
    example = example.split("```")[0].replace("my_recipe_schema", "grpo_schema")  # its schema extends GRPO's
    (tmp_path / "recipe").mkdir()
    assert restated_text(tmp_path / "recipe" / "my_recipe.yaml", example) == []
    restating = example + "beta: 0.0\n"
    assert restated_text(tmp_path / "recipe" / "my_recipe.yaml", restating) == ["beta=0.0"]


@pytest.mark.integration
def test_recipe_names_agree():
    """A recipe's registry name, its config dataclass's `name` default, its YAML file and the
    composed `recipe.name` are one name (the schema node `<name>_schema` is what the YAML extends)."""
    from rlrecipes.recipes import load_all

    recipes = load_all()
    assert sorted(recipes) == sorted(p.stem for p in (conf_dir() / "recipe").glob("*.yaml"))
    for name, cls in recipes.items():
        assert cls.name == name
        assert cls.config_cls.__dataclass_fields__["name"].default == name, cls.config_cls
        defaults = OmegaConf.load(conf_dir() / "recipe" / f"{name}.yaml").defaults
        assert f"{name}_schema" in defaults
        assert compose_config("train", [f"recipe={name}"]).recipe.name == name

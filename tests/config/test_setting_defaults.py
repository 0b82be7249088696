"""One home per default: a reward reads its settings from its `options`, then from the recipe's
fields of the same name (rlrecipes/rewards/__init__.py), so a reward's params dataclass and a
recipe's config dataclass that both have a field `gamma` hold one setting. Its default is
written once: in the reward's params, which the recipe's field then names
(`gamma: float = RandomParams.gamma`); two literals drift apart unseen."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rlrecipes"

# Fields that share a name without being one setting: the recipe never uses that reward.
NOT_THE_SAME_SETTING = {
    # J1's judge-prompt style (j1 | rm_r1 | compact) vs the `judge` reward's prompt template
    # (a model-graded reward recipe=j1 never names)
    ("J1Config.prompt", "JudgeRewardOptions.prompt"),
    # PPO's GAE discount vs the random reward's P(reward = 1): recipe=ppo hides its own fields
    # from the rewards (tests/recipes/test_ppo.py checks reward=random still draws at 0.5)
    ("PPOConfig.gamma", "RandomParams.gamma"),
}


def _defaults(tree: ast.Module, wanted) -> dict[str, dict[str, ast.expr]]:
    """class -> {field: default expression} for the classes `wanted(class node)` picks."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and wanted(node):
            out[node.name] = {
                s.target.id: s.value
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None
            }
    return out


def _params_classes(tree: ast.Module) -> set[str]:
    """The classes passed as `params=` to `register_reward`."""
    return {
        kw.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_reward"
        for kw in node.keywords
        if kw.arg == "params" and isinstance(kw.value, ast.Name)
    }


def _home(owners: dict[str, dict[str, ast.expr]], cls: str, name: str) -> str:
    """Where the default of `cls.name` is written: follows `Other.name` references."""
    seen = {cls}
    while True:
        ref = next(
            (
                n.value.id
                for n in ast.walk(owners[cls][name])
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr == name
            ),
            None,
        )
        if ref is None or ref not in owners or name not in owners[ref] or ref in seen:
            return f"{cls}.{name}"
        cls = ref
        seen.add(cls)


def defaults_declared_twice(rewards: dict[str, str], recipes: dict[str, str]) -> list[str]:
    params: dict[str, dict[str, ast.expr]] = {}
    for text in rewards.values():
        tree = ast.parse(text)
        names = _params_classes(tree)
        params.update(_defaults(tree, lambda c, names=names: c.name in names))
    configs: dict[str, dict[str, ast.expr]] = {}
    for text in recipes.values():
        configs.update(
            _defaults(ast.parse(text), lambda c: any(getattr(b, "id", None) == "RecipeConfig" for b in c.bases))
        )
    owners = {**params, **configs}
    found = []
    classes = sorted(owners)
    for i, a in enumerate(classes):
        for b in classes[i + 1 :]:
            if a in configs and b in configs:
                continue  # two recipes: different runs
            for name in sorted(set(owners[a]) & set(owners[b])):
                pair = tuple(sorted((f"{a}.{name}", f"{b}.{name}")))
                if pair in NOT_THE_SAME_SETTING:
                    continue
                if _home(owners, a, name) != _home(owners, b, name):
                    found.append(f"{a}.{name} and {b}.{name}")
    return found


def _sources(folder: str) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in (PACKAGE / folder).glob("*.py")}


def test_a_setting_read_by_a_reward_has_one_default():
    twice = defaults_declared_twice(_sources("rewards"), _sources("recipes"))
    assert not twice, "both declare a default (let one name the other's):\n" + "\n".join(twice)


def test_a_default_written_twice_is_found():
    reward = (
        "@dataclass\nclass RandomParams:\n    gamma: float = 0.5\nregister_reward('random', params=RandomParams)(f)\n"
    )
    twice = "class SpuriousConfig(RecipeConfig):\n    gamma: float = 0.5\n"
    once = "class SpuriousConfig(RecipeConfig):\n    gamma: float = RandomParams.gamma\n"
    assert defaults_declared_twice({"r.py": reward}, {"s.py": twice}) == ["RandomParams.gamma and SpuriousConfig.gamma"]
    assert defaults_declared_twice({"r.py": reward}, {"s.py": once}) == []

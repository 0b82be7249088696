"""The package's import graph: no loops, layers that only import downwards, and no
function-local imports of rlrecipes modules (they hide the graph) except the listed ones."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rlrecipes"

# What each part may not import: the engine and the plain building blocks sit below the
# recipes, the evaluation, the training job and the commands.
ABOVE = (
    "rlrecipes.runs",
    "rlrecipes.compose",
    "rlrecipes.recipes",
    "rlrecipes.eval",
    "rlrecipes.training",
    "rlrecipes.commands",
    "rlrecipes.cli",
)
FORBIDDEN = {
    "rlrecipes.engine": ABOVE,
    "rlrecipes.rewards": ABOVE + ("rlrecipes.engine",),
    "rlrecipes.grading": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards", "rlrecipes.metrics", "rlrecipes.data"),
    "rlrecipes.data": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards"),
    "rlrecipes.models": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards"),
    "rlrecipes.config": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards", "rlrecipes.models"),
    "rlrecipes.recipes": ("rlrecipes.eval", "rlrecipes.training", "rlrecipes.commands", "rlrecipes.cli"),
    "rlrecipes.eval": ("rlrecipes.recipes", "rlrecipes.engine", "rlrecipes.compose", "rlrecipes.runs")
    + ("rlrecipes.training", "rlrecipes.commands", "rlrecipes.cli"),
    "rlrecipes.judge": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards"),
    "rlrecipes.tool_loop": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards"),
    "rlrecipes.tools": ABOVE + ("rlrecipes.engine", "rlrecipes.rewards", "rlrecipes.models", "rlrecipes.data"),
    "rlrecipes.compose": ("rlrecipes.training", "rlrecipes.runs", "rlrecipes.commands", "rlrecipes.cli"),
    "rlrecipes.training": ("rlrecipes.runs", "rlrecipes.commands", "rlrecipes.cli"),
    "rlrecipes.runs": ("rlrecipes.commands", "rlrecipes.cli"),
    "rlrecipes.doctor": ("rlrecipes.commands", "rlrecipes.cli"),
    # the one sampling loop and the transformers path: below every package that generates
    # (eval, the judge commands, the judge reward, held-out accuracy, the toy's warm-start)
    "rlrecipes.generation": ABOVE
    + ("rlrecipes.engine", "rlrecipes.rewards", "rlrecipes.models", "rlrecipes.data", "rlrecipes.config")
    + ("rlrecipes.judge", "rlrecipes.tool_loop", "rlrecipes.tools", "rlrecipes.grading"),
    # the arithmetic evaluator shared by data/, tools/ and rewards/: below all three
    "rlrecipes.arithmetic": ABOVE
    + ("rlrecipes.engine", "rlrecipes.rewards", "rlrecipes.models", "rlrecipes.data", "rlrecipes.config")
    + ("rlrecipes.judge", "rlrecipes.tool_loop", "rlrecipes.tools", "rlrecipes.grading", "rlrecipes.generation"),
}
# function-local imports of rlrecipes modules that must stay local, and why
LOCAL_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    # Hydra's ConfigStore must hold every recipe's schema before a config composes, and the
    # schemas live next to their recipes, a layer above config (which they import for
    # RecipeConfig); the store reads the registries when a config is first composed.
    ("rlrecipes.compose.store", "rlrecipes.recipes"): "recipe schemas live with their recipes",
    ("rlrecipes.compose.store", "rlrecipes.eval.config"): "its per-benchmark fields need the registry",
    ("rlrecipes.eval.config", "rlrecipes.eval.benchmarks"): "one protocol field per registered benchmark",
    # TRL imports the optional vLLM, which logs on import: `rlrecipes train` composes the
    # config first, so a mistake is reported in one line before the job is imported
    ("rlrecipes.commands.train", "rlrecipes.training.job"): "the job imports TRL and the optional vLLM",
    ("rlrecipes.commands.train", "rlrecipes.training.plan"): "the plan imports TRL's GRPOConfig",
    ("rlrecipes.commands.train", "rlrecipes.training.resume"): "resume imports torch and transformers",
    ("rlrecipes.commands.sft", "rlrecipes.training.sft"): "the job imports TRL and the optional vLLM",
    ("rlrecipes.commands.sft", "rlrecipes.training.sft_plan"): "its checks build TRL's SFTConfig",
    ("rlrecipes.commands.sft", "rlrecipes.training.sft_resume"): "resume imports torch and transformers",
    ("rlrecipes.commands.sft", "rlrecipes.training.resume"): "resume imports torch and transformers",
    ("rlrecipes.commands.eval_checkpoints", "rlrecipes.runs.checkpoints"): "its evaluations import torch",
    # Every recipe module is imported to list the recipes and to compose a config, which load no
    # torch, transformers or TRL (tests/test_import_weight.py): what a recipe builds with them is
    # imported where it builds it, and the engine modules it imports at its top import them late.
    ("rlrecipes.recipes.clip_cov", "rlrecipes.engine.policy_objectives"): "its loss hook computes with torch",
    ("rlrecipes.recipes.gmpo", "rlrecipes.engine.policy_objectives"): "its loss hook computes with torch",
    ("rlrecipes.recipes.kl_cov", "rlrecipes.engine.policy_objectives"): "its loss hook computes with torch",
    ("rlrecipes.recipes.ppo", "rlrecipes.engine.critic"): "the critic is a transformers model (and a TrainerCallback)",
    ("rlrecipes.recipes.j1", "rlrecipes.engine.paired_batches"): "its sampler subclasses TRL's RepeatSampler",
    ("rlrecipes.recipes.ttrl", "rlrecipes.engine.group_subset"): "its hook computes with torch",
    ("rlrecipes.recipes.intuitor", "rlrecipes.rewards.certainty"): "self-certainty computes with torch",
    ("rlrecipes.recipes.search_r1", "rlrecipes.tool_loop.greedy"): "the tool warm-start generates with transformers",
    ("rlrecipes.recipes.tir", "rlrecipes.tool_loop.greedy"): "the tool warm-start generates with transformers",
    ("rlrecipes.models", "rlrecipes.models.toy"): "the toy builder trains with torch; a config names a toy unbuilt",
    ("rlrecipes.engine.grpo_args", "rlrecipes.engine.grpo_config"): "EngineGRPOConfig subclasses TRL's GRPOConfig",
    ("rlrecipes.engine.estimators", "rlrecipes.engine.advantages"): "tensor arithmetic and TRL's nanstd",
    ("rlrecipes.engine.policy_score", "rlrecipes.engine.advantages"): "tensor arithmetic and TRL's nanstd",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def resolve(name: str) -> str:
    """The module an imported dotted name lives in (`rlrecipes.grading.extract_answer` -> `rlrecipes.grading`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(name: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every rlrecipes import of `name`,
    leaving out `if TYPE_CHECKING:` blocks (annotations only, never executed)."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    local = {
        id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(f)
    }
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            module = resolve(target) if target.startswith("rlrecipes") else ""
            if module and module != name:
                found.append((module, node.lineno, id(node) in local))
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import loop as a path a -> b -> ... -> a, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (loop := visit(nxt)):
                return loop
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (loop := visit(start)):
            return loop
    return None


def test_find_cycle_finds_a_loop_and_only_a_loop():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_no_import_loops():
    edges = {name: {module for module, _, _ in found} for name, found in GRAPH.items()}
    loop = find_cycle(edges)
    assert loop is None, "import loop: " + " -> ".join(loop)


def test_layers_only_import_downwards():
    wrong = [
        f"{name}:{line} imports {module}"
        for name, found in GRAPH.items()
        for module, line, _ in found
        for part, banned in FORBIDDEN.items()
        if (name == part or name.startswith(part + ".")) and module.startswith(banned)
    ]
    assert not wrong, "\n".join(wrong)


def test_no_function_local_imports_of_rlrecipes_modules():
    hidden = [
        f"{name}:{line} imports {module} inside a function"
        for name, found in GRAPH.items()
        for module, line, local in found
        if local and (name, module) not in LOCAL_IMPORTS_ALLOWED
    ]
    assert not hidden, "\n".join(hidden)


def test_library_modules_do_not_import_typer():
    """Commands hold the command-line signatures; the library is usable without them."""
    offenders = [
        name
        for name, path in MODULES.items()
        if not name.startswith(("rlrecipes.commands", "rlrecipes.cli"))
        and any(
            isinstance(node, (ast.Import, ast.ImportFrom))
            and any((getattr(node, "module", None) or alias.name).split(".")[0] == "typer" for alias in node.names)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    ]
    assert not offenders, offenders

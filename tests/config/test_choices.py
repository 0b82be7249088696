"""One owner per choice: a fixed set of strings (a `Choice`) is written once, beside the code
that implements it, and everything else imports it. A tuple, list or set of the same
strings written anywhere else in the package is a second home that drifts (`TEMPLATES`
once stood beside `Template`, and each new template had to be added to both)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "rlrecipes"
CHOICE_BASES = {"Choice", "StrEnum"}


def _choices(tree: ast.Module) -> dict[str, frozenset[str]]:
    """Name -> value set of every `class X(Choice)` (or StrEnum) in a module."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", None) in CHOICE_BASES for b in node.bases):
            values = {
                stmt.value.value
                for stmt in node.body
                if isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Constant)
                and isinstance(stmt.value.value, str)
            }
            if len(values) >= 2:
                found[node.name] = frozenset(values)
    return found


def _string_collections(tree: ast.Module) -> list[tuple[int, frozenset[str]]]:
    """(line, strings) of every tuple/list/set literal made only of two or more strings."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                out.append((node.lineno, frozenset(e.value for e in node.elts)))
    return out


def value_sets_written_twice(sources: dict[str, str]) -> list[str]:
    """`file:line` for each literal collection whose strings are exactly a choice's values."""
    trees = {name: ast.parse(text) for name, text in sources.items()}
    choices = {values: f"{name}:{choice}" for name, tree in trees.items() for choice, values in _choices(tree).items()}
    return [
        f"{name}:{line} re-lists {choices[values]} ({', '.join(sorted(values))})"
        for name, tree in trees.items()
        for line, values in _string_collections(tree)
        if values in choices
    ]


def test_no_choice_has_its_values_written_a_second_time():
    sources = {str(p.relative_to(PACKAGE.parent)): p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py")}
    twice = value_sets_written_twice(sources)
    assert not twice, "import the Choice instead (its .values(), .valid()):\n" + "\n".join(twice)


def test_a_second_list_of_a_choices_values_is_found():
    owner = 'class Colour(Choice):\n    red = "red"\n    blue = "blue"\n'
    copy = 'COLOURS = ("blue", "red")\nif x not in ["red", "blue"]:\n    pass\nOTHER = ("red", "green")\n'
    assert value_sets_written_twice({"a.py": owner, "b.py": copy}) == [
        "b.py:1 re-lists a.py:Colour (blue, red)",
        "b.py:2 re-lists a.py:Colour (blue, red)",
    ]

"""`Choice`: the type of every setting that takes one of a fixed set of strings.

Each choice is declared once, in the lowest module that implements or reads it (the answer
styles in `grading/extract.py`, the prompt templates in `data/templates.py`), and the
config schemas import it from there, so a value set is never written twice
(tests/config/test_choices.py). Hydra refuses any other value at composition and names the
valid ones; library functions called with a plain string check it with `values()`.
"""

from __future__ import annotations

from enum import StrEnum


class Choice(StrEnum):
    """A fixed set of strings. Each member is named as users type it (`recipe.loss_type=bnpo`),
    with that string as its value, so it compares, hashes and prints as the plain string."""

    @classmethod
    def values(cls) -> tuple[str, ...]:
        return tuple(member.value for member in cls)

    @classmethod
    def valid(cls) -> str:
        """The values as an error message lists them: `a, b, c`."""
        return ", ".join(cls.values())

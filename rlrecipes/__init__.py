"""rlrecipes: the 2025 RL recipes for LLM reasoning on one TRL engine.

Importing the package is cheap on purpose (no torch/TRL at import time): the CLI's
`--help`, `recipes` and `config show` must answer in about a second.
"""

__version__ = "0.1.0"

"""How `rlrecipes eval` reads its overrides before Hydra composes them.

``benchmark=a,b`` without ``-m`` means "these benchmarks in one run" (rewritten to
``benchmark=a benchmark.names=[a,b]``); with ``-m`` it stays a Hydra sweep, one run per
benchmark, like any other comma list (checkpoints, protocols, seeds).
"""

from __future__ import annotations

from typing import Sequence


def rewrite_benchmark_list(overrides: Sequence[str], multirun: bool) -> list[str]:
    """`benchmark=a,b` without -m: one run on both (`benchmark=a benchmark.names=[a,b]`)."""
    out: list[str] = []
    for ov in overrides:
        key, sep, value = ov.partition("=")
        if not multirun and sep and key == "benchmark" and "," in value and not value.startswith(("[", "glob(")):
            names = [v.strip() for v in value.split(",") if v.strip()]
            out += [f"benchmark={names[0]}", f"benchmark.names=[{','.join(names)}]"]
        else:
            out.append(ov)
    return out

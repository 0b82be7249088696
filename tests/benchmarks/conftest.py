"""The bench scripts import their helpers as top-level modules (benchkit, readme_figures), as
they do when run from benchmarks/; the tests do the same."""

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

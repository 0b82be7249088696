from pathlib import Path

import pytest

from tests.competent_toy import competent_toy


@pytest.fixture(scope="session")
def competent_toy_dir() -> Path:
    """A toy model right about half the time (tests/competent_toy.py)."""
    return competent_toy()

"""fixes.setting: a run's config value read as the kind a check needs."""

from __future__ import annotations

import math

from rlrecipes.doctor.fixes import setting
from rlrecipes.doctor.reading import read_run
from tests.doctor.rundirs import make_run, rows


def test_a_float_setting_keeps_an_infinity_and_drops_what_is_no_number(tmp_path):
    values = {"inf": math.inf, "nan": math.nan, "flag": True, "text": "0.2", "whole": 1}
    run = read_run(make_run(tmp_path / "run", rows(), config={f"recipe.{k}": v for k, v in values.items()}))
    assert setting(run, "recipe.inf", float) == math.inf  # an unbounded clip range
    assert setting(run, "recipe.nan", float) is None
    assert setting(run, "recipe.flag", float) is None and setting(run, "recipe.text", float) is None
    assert setting(run, "recipe.whole", float) == 1.0

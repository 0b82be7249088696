"""`rlrecipes doctor`: a verdict on a finished or running training run from its directory
alone — healthy, or each failure found with its evidence, likely cause and fix.

`reading` reads the run, `learning_checks` and `stability_checks` hold the checks (their
numbers in `thresholds`), `diagnose` runs them, `verdict` prints or exports the result.
"""

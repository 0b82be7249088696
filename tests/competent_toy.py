"""A toy model that is right about half the time, for end-to-end checks that need correct answers.

The TINY toy model (tests/conftest.py) answers almost nothing correctly, so on it a gold-accuracy
reward, a majority label that matches gold, a held-out accuracy measured on the wrong model or on
half the problems all read 0: an end-to-end assertion about them could not fail. COMPETENT is
single-digit addition (100 problems) learned from a teacher without the flaw: about 0.9 on its
training problems and 0.45 on its 20 held-out ones, built in about 30 seconds on one core and
then cached like every toy model. Pass COMPETENT after TINY (`compose(*COMPETENT, ...)`).
"""

from __future__ import annotations

from pathlib import Path

COMPETENT = [
    "data.synthetic.operand_max=[9,9]",
    "data.synthetic.num_train=80",
    "data.synthetic.num_eval=20",
    "data.synthetic.teacher_error_rate=0",
    "model.toy.sft_max_steps=300",
    "model.toy.sft_eval_every=50",
    "model.toy.sft_dev_size=20",
    "model.toy.sft_batch_size=32",
]


def competent_toy() -> Path:
    """The COMPETENT toy model folder (built on first use, then read from the cache)."""
    from rlrecipes.data.problems import load_problem_set
    from rlrecipes.models import resolve_model_path
    from tests.conftest import compose

    cfg = compose(*COMPETENT)
    problems = load_problem_set(cfg.data)
    return Path(resolve_model_path(cfg.model, problems.task, cfg.data.synthetic, log=lambda _: None))

"""Advantages from a model-computed score (the engine side of INTUITOR), with hand values."""

from contextlib import nullcontext
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine.policy_score import PolicyScoreAdvantage
from rlrecipes.errors import UserError

EPS = 1e-4

# Scores of two groups of 4; this process (index 1 of 2) holds the second group.
SCORES = torch.tensor([4.0, 4.0, 4.0, 4.0, 1.0, 2.0, 3.0, 5.0])
# group 1: mean 2.75, deviations -1.75, -0.75, 0.25, 2.25; unbiased variance 8.75 / 3
STD = (8.75 / 3) ** 0.5
EXPECTED = [d / (STD + EPS) for d in (-1.75, -0.75, 0.25, 2.25)]


class Model(torch.nn.Linear):
    is_gradient_checkpointing = False


def make_trainer(weights):
    logged = {}
    trainer = SimpleNamespace(
        model=Model(1, 1), ref_model=None, num_generations=4, scale_rewards="group",
        reward_weights=torch.tensor(weights), args=SimpleNamespace(gradient_checkpointing_kwargs=None),
        accelerator=SimpleNamespace(process_index=1, unwrap_model=lambda m: m, gather=lambda t: SCORES.clone(),
                                    autocast=nullcontext),
        log_metric=lambda name, value: logged.__setitem__(name, value),
    )
    return trainer, logged


def batch():
    return {"completion_ids": torch.zeros(4, 2), "advantages": torch.tensor([10.0, 20.0, 30.0, 40.0])}


def test_scores_replace_the_advantages_when_every_reward_weight_is_zero():
    trainer, logged = make_trainer([0.0])
    seen = []
    hook = PolicyScoreAdvantage(lambda model, b, t: (seen.append(model), SCORES[4:])[1], "certainty")
    out = hook.after_scoring(trainer, batch(), torch.zeros(8, 1))
    assert out["advantages"].tolist() == pytest.approx(EXPECTED, abs=1e-6)
    assert seen == [trainer.model]  # online: the current policy scores
    assert logged["certainty/mean"] == pytest.approx(SCORES.mean().item())
    assert logged["certainty/std"] == pytest.approx(SCORES.std().item())


def test_reward_advantages_are_added_when_a_weight_is_non_zero():
    trainer, _ = make_trainer([0.0, 1.0])
    hook = PolicyScoreAdvantage(lambda model, b, t: SCORES[4:], "certainty")
    out = hook.after_scoring(trainer, batch(), torch.zeros(8, 2))
    assert out["advantages"].tolist() == pytest.approx([e + a for e, a in zip(EXPECTED, [10, 20, 30, 40])], abs=1e-5)


def test_offline_scorer_is_a_frozen_copy_of_the_initial_model():
    trainer, _ = make_trainer([0.0])
    seen = []
    hook = PolicyScoreAdvantage(lambda model, b, t: (seen.append(model), SCORES[4:])[1], "certainty",
                                scorer="offline")
    hook.bind(trainer)
    initial = trainer.model.weight.detach().clone()
    with torch.no_grad():
        trainer.model.weight.add_(1.0)  # training moves the policy...
    hook.after_scoring(trainer, batch(), torch.zeros(8, 1))
    [scorer] = seen
    assert scorer is not trainer.model and torch.equal(scorer.weight, initial)  # ...not the scorer
    assert not scorer.weight.requires_grad and not scorer.training


def test_offline_scorer_reuses_the_kl_reference_model():
    trainer, _ = make_trainer([0.0])
    trainer.ref_model = Model(1, 1)
    hook = PolicyScoreAdvantage(lambda model, b, t: SCORES[4:], "certainty", scorer="offline")
    hook.bind(trainer)
    assert torch.equal(hook.frozen.weight, trainer.ref_model.weight)


def test_unknown_scorer_is_one_line():
    with pytest.raises(UserError, match="scorer='future'; valid: online, offline"):
        PolicyScoreAdvantage(lambda *a: None, "x", scorer="future")

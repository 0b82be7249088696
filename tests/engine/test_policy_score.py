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
        model=Model(1, 1),
        ref_model=None,
        num_generations=4,
        scale_rewards="group",
        reward_weights=torch.tensor(weights),
        args=SimpleNamespace(gradient_checkpointing_kwargs=None),
        accelerator=SimpleNamespace(
            process_index=1, unwrap_model=lambda m: m, gather=lambda t: SCORES.clone(), autocast=nullcontext
        ),
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


@pytest.mark.integration
def test_offline_scorer_is_a_frozen_copy_of_the_initial_model():
    trainer, _ = make_trainer([0.0])
    seen = []
    hook = PolicyScoreAdvantage(lambda model, b, t: (seen.append(model), SCORES[4:])[1], "certainty", scorer="offline")
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


def test_sharded_is_read_from_the_trainer():
    from rlrecipes.engine.policy_score import sharded

    def trainer(fsdp=False, deepspeed=False, stage=None):
        plugin = SimpleNamespace(zero_stage=stage) if stage else None
        return SimpleNamespace(
            is_fsdp_enabled=fsdp,
            is_deepspeed_enabled=deepspeed,
            accelerator=SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=plugin)),
        )

    assert sharded(trainer(fsdp=True))
    assert sharded(trainer(deepspeed=True, stage=3))
    assert not sharded(trainer(deepspeed=True, stage=2))  # ZeRO-2 keeps whole parameters on every rank
    assert not sharded(trainer())


def sharded_trainer(weights=(0.0,)):
    """A trainer whose model is 'wrapped': trainer.model is not what unwrap_model returns."""
    trainer, logged = make_trainer(list(weights))
    inner, wrapper = trainer.model, Model(1, 1)
    trainer.model = wrapper
    trainer.accelerator.unwrap_model = lambda m: inner if m is wrapper else m
    trainer.is_fsdp_enabled, trainer.is_deepspeed_enabled = True, False
    return trainer, inner, wrapper


def test_a_sharded_policy_is_scored_through_the_wrapped_module():
    """Under FSDP the submodules of the unwrapped model hold only this rank's shards:
    the score function must get the wrapper, whose forward gathers them."""
    trainer, inner, wrapper = sharded_trainer()
    seen = []
    hook = PolicyScoreAdvantage(lambda model, b, t: (seen.append(model), SCORES[4:])[1], "certainty")
    hook.bind(trainer)
    hook.after_scoring(trainer, batch(), torch.zeros(8, 1))
    assert seen == [wrapper]


def test_offline_scorer_never_deep_copies_a_sharded_model(monkeypatch):
    import rlrecipes.engine.policy_score as policy_score

    trainer, _, _ = sharded_trainer()
    frozen = Model(1, 1)
    monkeypatch.setattr(policy_score.copy, "deepcopy", lambda *a: pytest.fail("deep-copied a sharded model"))
    monkeypatch.setattr(policy_score, "_sharded_frozen_copy", lambda t: frozen)
    seen = []
    hook = PolicyScoreAdvantage(lambda model, b, t: (seen.append(model), SCORES[4:])[1], "certainty", scorer="offline")
    hook.bind(trainer)
    hook.after_scoring(trainer, batch(), torch.zeros(8, 1))
    assert seen == [frozen]


def lora_trainer():
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=13,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    base = LlamaForCausalLM(config)
    reference = LlamaForCausalLM(config)
    reference.load_state_dict(base.state_dict())
    policy = get_peft_model(base, LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False))
    trainer, _ = make_trainer([0.0])
    trainer.model = policy.train()
    return trainer, reference.eval()


def last_logits(model):
    return model(input_ids=torch.tensor([[1, 2, 3]] * 4)).logits[:, -1, 0]


@pytest.mark.integration
@pytest.mark.parametrize("scorer", ["online", "offline"])
def test_a_lora_policy_is_scored_with_adapters_online_and_without_them_offline(scorer, monkeypatch):
    """Offline with LoRA is the base model under the adapters (as TRL's reference log-probs),
    not a deep copy of the whole model."""
    import rlrecipes.engine.policy_score as policy_score

    trainer, reference = lora_trainer()
    monkeypatch.setattr(policy_score.copy, "deepcopy", lambda *a: pytest.fail("copied a LoRA model"))
    seen = []
    hook = PolicyScoreAdvantage(
        lambda model, b, t: (seen.append(last_logits(model)), SCORES[4:])[1], "certainty", scorer=scorer
    )
    hook.bind(trainer)
    hook.after_scoring(trainer, batch(), torch.zeros(8, 1))
    with torch.no_grad():
        base, adapted = last_logits(reference), last_logits(trainer.model)
    assert not torch.allclose(base, adapted, atol=1e-4)
    assert torch.allclose(seen[0], adapted if scorer == "online" else base, atol=1e-6)
    assert hook.frozen is None

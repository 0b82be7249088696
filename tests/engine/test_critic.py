"""PPO's critic hook (rlrecipes/engine/critic.py) on a tiny randomly initialised model, with a
stand-in trainer: how the critic is built, where its values are read, the advantages it hands
TRL, verl's learning-rate schedule, critic-only rollouts and its checkpoint files. The
assertions hold for any initialisation (relations between the hook's outputs and the model's
own forward pass, exact equalities of copied weights)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from rlrecipes.engine.critic import (
    CRITIC_FOLDER,
    CriticSettings,
    PPOCritic,
    backbone_state,
    build_critic,
    critic_inputs,
    token_values,
    value_head_problem,
)
from rlrecipes.errors import UserError

VOCAB = 32
NO_VALUE_HEAD = "cohere"  # a causal LM transformers has no token-classification class for


def tiny_policy(seed: int = 0):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(seed)
    config = Qwen3Config(
        vocab_size=VOCAB,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        max_position_embeddings=64,
        tie_word_embeddings=True,
    )
    return Qwen3ForCausalLM(config)


class StandInTrainer:
    """What the hook reads of RecipeGRPOTrainer, on one process."""

    is_fsdp_enabled = is_deepspeed_enabled = False
    ref_model = None

    def __init__(self, policy, tmp_path: Path, **args):
        self.model = policy.train()
        self.accelerator = SimpleNamespace(
            unwrap_model=lambda m: m, device=torch.device("cpu"), num_processes=1, process_index=0
        )
        defaults = dict(
            gradient_checkpointing=False,
            steps_per_generation=1,
            gradient_accumulation_steps=1,
            per_device_train_batch_size=2,
            num_iterations=1,
            bf16=False,
            output_dir=str(tmp_path / "checkpoints"),
        )
        self.args = SimpleNamespace(**{**defaults, **args})
        self.reward_weights = torch.tensor([1.0])
        self.logged: list[dict] = []
        self.callbacks: list = []

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def log_metric(self, name, value):
        if not self.logged or name in self.logged[-1]:
            self.logged.append({})
        self.logged[-1][name] = value


def scored_batch() -> tuple[dict, torch.Tensor]:
    """Two completions after left-padded prompts: the first 3 tokens long, the second 2 (then
    padding); rewards 1 and 0."""
    batch = {
        "prompt_ids": torch.tensor([[0, 5, 6], [7, 8, 9]]),
        "prompt_mask": torch.tensor([[0, 1, 1], [1, 1, 1]]),
        "completion_ids": torch.tensor([[10, 11, 12], [13, 14, 0]]),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 1, 0]]),
        "advantages": torch.tensor([0.5, -0.5]),
    }
    return batch, torch.tensor([[1.0], [0.0]])


def settings(**changes) -> CriticSettings:
    base = dict(learning_rate=1e-2, gamma=1.0, lam=1.0, kl_coef=0.0, whiten_advantages=False, seed=3)
    return CriticSettings(**{**base, **changes})


def bound(tmp_path, policy=None, **changes) -> tuple[PPOCritic, StandInTrainer]:
    trainer = StandInTrainer(policy if policy is not None else tiny_policy(), tmp_path)
    hook = PPOCritic(settings(**changes))
    hook.bind(trainer)
    return hook, trainer


def weights(module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


# ------------------------------------------------------------------ no model
def test_the_value_head_needs_a_causal_lm_with_a_hidden_size():
    assert value_head_problem({"model_type": "qwen3", "hidden_size": 16}) is None
    assert "not a causal language model" in value_head_problem({"model_type": "clip", "hidden_size": 16})
    assert "no token-classification" in value_head_problem({"model_type": NO_VALUE_HEAD, "hidden_size": 16})
    assert "no hidden_size" in value_head_problem({"model_type": "llama"})


# ------------------------------------------------------------------ the value model
@pytest.mark.integration
def test_the_critic_is_the_policy_backbone_with_a_seeded_head_and_leaves_the_rng_alone():
    policy = tiny_policy()
    rng = torch.get_rng_state()
    one, two, other = (
        build_critic(policy, None, seed=3),
        build_critic(policy, None, seed=3),
        build_critic(policy, None, 4),
    )
    assert torch.equal(torch.get_rng_state(), rng)  # sampling after the build draws what it drew without it
    for name, tensor in policy.model.state_dict().items():  # every backbone weight copied
        assert torch.equal(one.model.state_dict()[name], tensor), name
    assert all(torch.equal(a, b) for a, b in zip(one.state_dict().values(), two.state_dict().values()))
    assert not torch.equal(one.score.weight, other.score.weight)  # the head is drawn from the seed
    assert one.config.num_labels == 1 and one.score.weight.shape == (1, 16)


@pytest.mark.integration
def test_a_lora_policy_gives_its_base_layers_to_the_critic():
    from peft import LoraConfig, get_peft_model

    policy = tiny_policy()
    plain = weights(policy.model)
    wrapped = get_peft_model(policy, LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    state = backbone_state(wrapped)
    assert not any("lora_" in name or "base_layer" in name for name in state)
    critic = build_critic(wrapped, None, seed=3)
    for name, tensor in plain.items():
        assert torch.equal(critic.model.state_dict()[name], tensor), name


@pytest.mark.integration
def test_a_value_is_read_at_the_position_before_its_token():
    critic = build_critic(tiny_policy(), None, seed=3).eval()
    batch, _ = scored_batch()
    ids, attention, positions = critic_inputs(batch)
    assert positions.tolist() == [[0, 0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 4]]  # counted from each row's first token
    with torch.no_grad():
        got = token_values(critic, ids, attention, positions, 3)
        every = critic(input_ids=ids, attention_mask=attention, position_ids=positions).logits[..., 0]
    # completion token t (sequence position 3 + t) is valued at position 2 + t: the state it was chosen in
    assert torch.equal(got, every[:, 2:5])


# ------------------------------------------------------------------ the hook
@pytest.mark.integration
def test_the_advantages_are_the_score_minus_each_tokens_value(tmp_path):
    """gamma = lambda = 1, no whitening, no KL: A_t = (the reward from t on) - V_t, i.e. the
    score minus the critic's value on every valid token, 0 on padding, a (B, T) tensor."""
    hook, trainer = bound(tmp_path)
    batch, rewards = scored_batch()
    ids, attention, positions = critic_inputs(batch)
    with torch.no_grad():
        values = token_values(hook.critic.eval(), ids, attention, positions, 3)
    out = hook.after_scoring(trainer, batch, rewards)
    expected = torch.stack([1.0 - values[0], torch.cat([0.0 - values[1, :2], torch.zeros(1)])])
    torch.testing.assert_close(out["advantages"], expected)
    assert out["advantages"].shape == (2, 3)


@pytest.mark.integration
def test_an_unscorable_completion_counts_as_reward_zero(tmp_path):
    hook, trainer = bound(tmp_path)
    batch, _ = scored_batch()
    ids, attention, positions = critic_inputs(batch)
    with torch.no_grad():
        values = token_values(hook.critic.eval(), ids, attention, positions, 3)
    out = hook.after_scoring(trainer, batch, torch.tensor([[1.0], [float("nan")]]))  # every reward gave None
    torch.testing.assert_close(out["advantages"][1], torch.cat([-values[1, :2], torch.zeros(1)]))


@pytest.mark.integration
def test_the_kl_penalty_falls_on_the_tokens_the_model_wrote(tmp_path):
    """kl_coef 0.5, log pi_old - log pi_ref given per token; completion 1's token 1 is a tool
    result (tool_mask 0) and its token 2 padding, so only its token 0 is penalised:
        r = [-0.1, -0.2, 1 - 0] | [-0.3, 0 + 0 (score 0), 0]
    gamma = lambda = 1: A_t = (rewards from t on) - V_t = [0.7, 0.8, 1.0] - V | [-0.3, 0, 0] - V.
    critic/kl is verl's mean over completions of each one's token mean: (0.6/3 + 0.6/1) / 2 = 0.4."""
    hook, trainer = bound(tmp_path, kl_coef=0.5)
    batch, rewards = scored_batch()
    batch["tool_mask"] = torch.tensor([[1, 1, 1], [1, 0, 1]])
    batch["ref_per_token_logps"] = torch.full((2, 3), -1.0)
    batch["old_per_token_logps"] = torch.tensor([[-0.8, -0.6, -1.0], [-0.4, 5.0, 9.0]])
    ids, attention, positions = critic_inputs(batch)
    with torch.no_grad():
        values = token_values(hook.critic.eval(), ids, attention, positions, 3)
    out = hook.after_scoring(trainer, batch, rewards)
    expected = torch.tensor([[0.7, 0.8, 1.0], [-0.3, 0.0, 0.0]]) - values * batch["completion_mask"]
    torch.testing.assert_close(out["advantages"], expected)
    assert trainer.logged[0]["critic/kl"] == pytest.approx(0.4) and trainer.logged[0]["critic/kl_coeff"] == 0.5


@pytest.mark.integration
def test_the_first_critic_update_is_at_learning_rate_zero_as_in_verl(tmp_path):
    hook, trainer = bound(tmp_path)
    before = weights(hook.critic)
    batch, rewards = scored_batch()
    rng = torch.get_rng_state()
    hook.after_scoring(trainer, batch, rewards)
    assert torch.equal(torch.get_rng_state(), rng)  # no dropout: the critic draws no random numbers
    assert all(torch.equal(before[k], v) for k, v in hook.critic.state_dict().items())  # lr factor 0
    hook.after_scoring(trainer, *scored_batch())
    assert not torch.equal(before["score.weight"], hook.critic.score.weight)
    assert [row["critic/lr"] for row in trainer.logged] == [0.0, 1e-2]
    assert trainer.logged[0]["critic/vf_loss"] > 0 and "critic/kl" not in trainer.logged[0]


@pytest.mark.integration
def test_critic_only_rollouts_hold_the_policy_then_release_it(tmp_path):
    hook, trainer = bound(tmp_path, warmup_rollouts=2)
    seen = []
    for _ in range(3):
        hook.after_scoring(trainer, *scored_batch())
        seen.append(hook.trains_policy())
    assert seen == [False, False, True]


@pytest.mark.integration
def test_a_policy_held_by_a_hook_gets_no_gradient():
    from rlrecipes.engine.trainer import RecipeGRPOTrainer

    class Holds(PPOCritic):
        def __init__(self):
            self.actor_trains = False

    policy = tiny_policy()
    fake = SimpleNamespace(hooks=[Holds()], accelerator=SimpleNamespace(device=torch.device("cpu")))
    loss = RecipeGRPOTrainer.compute_loss(fake, policy, {})
    loss.backward()
    assert loss.item() == 0.0 and all(p.grad is None for p in policy.parameters())  # AdamW skips them


@pytest.mark.integration
def test_the_checkpoint_files_restore_the_critic_and_its_optimizer(tmp_path):
    from safetensors.torch import load_file

    hook, trainer = bound(tmp_path)
    for _ in range(2):
        hook.after_scoring(trainer, *scored_batch())
    folder = tmp_path / "checkpoint-2"
    hook.save_files(folder)
    assert sorted(p.name for p in (folder / CRITIC_FOLDER).iterdir()) == [
        "config.json",
        "model.safetensors",
        "optimizer.pt",
    ]
    assert set(load_file(folder / CRITIC_FOLDER / "model.safetensors")) == set(hook.critic.state_dict())
    torch.load(folder / CRITIC_FOLDER / "optimizer.pt", weights_only=True)  # tensors and plain values only

    fresh, _ = bound(tmp_path / "again")
    fresh.load_state_dict(hook.state_dict())
    fresh.load_files(folder)
    assert fresh.rollouts == 2
    assert all(torch.equal(a, b) for a, b in zip(fresh.critic.state_dict().values(), hook.critic.state_dict().values()))
    mine, theirs = hook.optimizer.state_dict(), fresh.optimizer.state_dict()
    assert [s["step"] for s in mine["state"].values()] == [s["step"] for s in theirs["state"].values()]
    assert all(torch.equal(mine["state"][i]["exp_avg_sq"], theirs["state"][i]["exp_avg_sq"]) for i in mine["state"])
    # both take the same next step
    hook.after_scoring(trainer, *scored_batch())
    fresh.after_scoring(fresh.trainer, *scored_batch())
    assert all(torch.equal(a, b) for a, b in zip(fresh.critic.state_dict().values(), hook.critic.state_dict().values()))


@pytest.mark.integration
def test_the_critic_refuses_a_sharded_launch(tmp_path):
    trainer = StandInTrainer(tiny_policy(), tmp_path)
    trainer.is_fsdp_enabled = True
    with pytest.raises(UserError, match="recipe=ppo keeps a whole critic on every process") as err:
        PPOCritic(settings()).bind(trainer)
    assert "\n" not in str(err.value)

"""Self-certainty (INTUITOR): KL(U || p) per token, averaged over a response.

Hand values, V = 3, logits log[1, 2, 5] -> p = [1/8, 2/8, 5/8]:
    KL(U||p) = 1/3 * sum_j log((1/3) / p_j) = 1/3 * log(8^3 / (3 * 6 * 15)) = log(512/270) / 3
V = 4, logits log[1, 1, 2, 4] -> p = [1/8, 1/8, 2/8, 4/8]:
    KL = 1/4 * log((1/4)^4 / (1/8 * 1/8 * 2/8 * 4/8)) = 1/4 * log(4096/2048) = log(2) / 4
Equal logits -> p uniform -> KL = 0.
"""

import math

import pytest
import torch

from rlrecipes.rewards.certainty import policy_self_certainty, self_certainty, token_self_certainty

A = math.log(512 / 270) / 3  # V = 3 token above
B = math.log(2) / 4  # V = 4 token above


def test_token_values_by_hand_float64():
    z3 = torch.tensor([[0.0, math.log(2), math.log(5)], [7.0, 7.0, 7.0]], dtype=torch.float64)
    assert token_self_certainty(z3).tolist() == pytest.approx([A, 0.0], abs=1e-15)
    z4 = torch.tensor([0.0, 0.0, math.log(2), math.log(4)], dtype=torch.float64)
    assert token_self_certainty(z4).item() == pytest.approx(B, abs=1e-15)


def test_sequence_mean_over_the_mask_by_hand():
    z = torch.tensor([0.0, math.log(2), math.log(5)], dtype=torch.float64)
    flat = torch.zeros(3, dtype=torch.float64)
    logits = torch.stack([torch.stack([z, flat, z + 100.0]), torch.stack([z, z, z])])  # [2, 3, 3]
    mask = torch.tensor([[1, 1, 0], [0, 0, 0]])  # 2nd row: an empty completion
    out = self_certainty(logits, mask)
    assert out.dtype == torch.float64
    # row 0: (A + 0) / 2, the masked third position does not count; row 1: empty -> 0
    assert out.tolist() == pytest.approx([A / 2, 0.0], abs=1e-15)


def test_shift_invariance_and_identity_with_logsumexp_minus_mean():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 11, dtype=torch.float64) * 3
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 1, 1, 0, 1]])
    lse_minus_mean = torch.logsumexp(logits, -1) - logits.mean(-1)  # the papers' code, no -log V
    m = mask.double()
    expected = (lse_minus_mean * m).sum(-1) / m.sum(-1) - math.log(11)
    assert torch.allclose(self_certainty(logits, mask), expected, atol=1e-12)
    # adding a constant to every logit of a position changes nothing
    assert torch.allclose(self_certainty(logits + 42.0, mask), expected, atol=1e-10)
    # KL is never negative; chunking changes nothing
    assert (self_certainty(logits, mask) >= 0).all()
    assert torch.equal(self_certainty(logits, mask, chunk_tokens=1), self_certainty(logits, mask))


def test_float32_input_is_computed_in_float32_without_overflow():
    logits = torch.tensor([[[1e4, 0.0, 0.0]]], dtype=torch.float32)  # a naive exp would overflow
    out = self_certainty(logits, torch.ones(1, 1))
    assert out.dtype == torch.float32
    assert out.item() == pytest.approx(1e4 - 1e4 / 3 - math.log(3), rel=1e-6)


def test_bad_shapes_are_one_clear_error():
    with pytest.raises(ValueError, match=r"logits \[B, T, V\] and mask \[B, T\]"):
        self_certainty(torch.zeros(2, 3), torch.ones(2, 3))


def _tiny_model(vocab=13):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).eval()


def test_policy_pass_uses_the_shifted_temperature_scaled_distributions():
    """The position that predicts completion token t is the one before it, and the logits are
    divided by the sampling temperature, exactly as TRL scores log-probs."""
    model = _tiny_model()
    prompt = torch.tensor([[0, 5, 6], [7, 8, 9]])
    prompt_mask = torch.tensor([[0, 1, 1], [1, 1, 1]])  # left padding
    completion = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]])
    completion_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])  # right padding
    temperature = 0.7
    with torch.no_grad():
        full = model(
            input_ids=torch.cat([prompt, completion], 1), attention_mask=torch.cat([prompt_mask, completion_mask], 1)
        ).logits.double()
    z = full[:, 2:-1] / temperature  # positions 2..5 predict completion tokens 0..3
    per_token = torch.logsumexp(z, -1) - z.mean(-1) - math.log(13)
    m = completion_mask.double()
    expected = (per_token * m).sum(-1) / m.sum(-1)
    got = policy_self_certainty(
        model, prompt, prompt_mask, completion, completion_mask, temperature=temperature, batch_size=1, chunk_tokens=2
    )
    assert torch.allclose(got.double(), expected, atol=1e-5)
    # an unshifted window (the paper fork's off-by-one) gives a different value
    z_unshifted = full[:, 3:] / temperature
    unshifted = ((torch.logsumexp(z_unshifted, -1) - z_unshifted.mean(-1) - math.log(13)) * m).sum(-1) / m.sum(-1)
    assert not torch.allclose(got.double(), unshifted, atol=1e-4)


# Two rows, left-padded prompts, right-padded completions (as TRL batches them).
PROMPT, PROMPT_MASK = torch.tensor([[0, 5, 6], [7, 8, 9]]), torch.tensor([[0, 1, 1], [1, 1, 1]])
COMPLETION, COMPLETION_MASK = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0]]), torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])


def full_softmax_reference(model, temperature):
    """Self-certainty from the model's complete forward logits (no chunks, float64)."""
    with torch.no_grad():
        full = model(
            input_ids=torch.cat([PROMPT, COMPLETION], 1), attention_mask=torch.cat([PROMPT_MASK, COMPLETION_MASK], 1)
        ).logits.double()
    z = full[:, 2:-1] / temperature
    per_token = torch.logsumexp(z, -1) - z.mean(-1) - math.log(z.size(-1))
    m = COMPLETION_MASK.double()
    return (per_token * m).sum(-1) / m.sum(-1)


def score(model, **kwargs):
    return policy_self_certainty(
        model, PROMPT, PROMPT_MASK, COMPLETION, COMPLETION_MASK, temperature=0.7, batch_size=1, chunk_tokens=2, **kwargs
    ).double()


def _lora(model):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)  # init_lora_weights=False: random A and B, so the adapter changes the outputs
    return get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))


def test_adapted_model_is_scored_with_its_adapters():
    """On a PeftModel `base_model` is peft's LoraModel, not the transformer backbone: the
    score must come from the adapted backbone and head (and from the base without them)."""
    peft_model = _lora(_tiny_model())
    assert torch.allclose(score(peft_model), full_softmax_reference(peft_model, 0.7), atol=1e-5)
    with peft_model.disable_adapter():
        base = score(peft_model)
        assert torch.allclose(base, full_softmax_reference(peft_model, 0.7), atol=1e-5)
    assert not torch.allclose(base, score(peft_model), atol=1e-4)  # the adapter matters here


def _tiny_gemma2():
    """A model whose forward softcaps its logits (the chunked path must apply it itself)."""
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(
        vocab_size=13,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=8,
        final_logit_softcapping=0.5,
    )
    return Gemma2ForCausalLM(config).eval()


@pytest.mark.parametrize(
    "build", [_tiny_model, _tiny_gemma2, lambda: _lora(_tiny_model())], ids=["llama", "gemma2-softcap", "llama-lora"]
)
def test_forward_path_for_sharded_models_agrees_with_the_chunked_path(build):
    """The sharded path (the model's own forward with logits_to_keep) and the chunked
    path (backbone + head on chunks) score the same distributions."""
    model = build()
    chunked, by_forward = score(model), score(model, sharded=True)
    assert torch.allclose(by_forward, chunked, atol=1e-6)
    assert torch.allclose(by_forward, full_softmax_reference(model, 0.7), atol=1e-5)

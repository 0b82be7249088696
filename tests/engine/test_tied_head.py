"""A resume loads a checkpoint that stores a tied output head once: the alias is restored by
tying, and no "missing keys" warning alarms the user; a key really missing still warns."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.utils import logging as hf_logging

from rlrecipes.engine.trainer import RecipeGRPOTrainer, shared_parameter_names


def tiny(tied: bool) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=tied,
    )  # fmt: skip
    return LlamaForCausalLM(config)


def warnings_after_load(model, drop: str, caplog) -> str:
    trainer = object.__new__(RecipeGRPOTrainer)  # only the model is read
    trainer.model = model
    result = model.load_state_dict({k: v for k, v in model.state_dict().items() if k != drop}, strict=False)
    hf_logging.set_verbosity_warning()
    hf_logging.enable_propagation()
    trainer._issue_warnings_after_load(result)
    return caplog.text


def test_tied_parameters_are_found():
    assert shared_parameter_names(tiny(tied=True)) == {"model.embed_tokens.weight", "lm_head.weight"}
    assert shared_parameter_names(tiny(tied=False)) == set()


def test_a_tied_head_left_out_of_a_checkpoint_is_not_reported_missing(caplog):
    model = tiny(tied=True)
    assert "missing keys" not in warnings_after_load(model, "lm_head.weight", caplog)
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()


@pytest.mark.parametrize("tied, drop", [(False, "lm_head.weight"), (True, "model.norm.weight")])
def test_a_key_really_missing_still_warns(tied, drop, caplog):
    assert f"missing keys in the checkpoint model loaded: ['{drop}']" in warnings_after_load(tiny(tied), drop, caplog)

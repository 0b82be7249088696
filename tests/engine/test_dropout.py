"""Which settings make a forward random (engine/dropout.py): the probe's and the critic's one test."""

import torch

from rlrecipes.engine.dropout import has_dropout


def test_dropout_is_found_in_modules_and_in_config_rates():
    from types import SimpleNamespace

    def configured(**rates):
        model = torch.nn.Linear(1, 1)
        model.config = SimpleNamespace(to_dict=lambda: {"id2label": {0: "a"}, **rates})
        return model

    assert has_dropout(torch.nn.Sequential(torch.nn.Dropout(0.05)))
    assert not has_dropout(torch.nn.Sequential(torch.nn.Dropout(0.0), torch.nn.Identity()))  # LoRA's dropout 0
    assert has_dropout(configured(attention_dropout=0.1))  # Llama/Qwen: applied in the forward, no module
    assert has_dropout(configured(resid_pdrop=0.1))
    assert has_dropout(configured(text_config={"attention_dropout": 0.1}))
    assert not has_dropout(configured(attention_dropout=0.0, classifier_dropout=None, hidden_size=2))


def test_the_critic_turns_every_dropout_rate_of_its_config_off():
    from types import SimpleNamespace

    from rlrecipes.engine.critic import _no_dropout

    config = SimpleNamespace(attention_dropout=0.1, resid_pdrop=0.1, hidden_size=64, layer_norm_eps=1e-5)
    _no_dropout(config)
    assert vars(config) == {
        "attention_dropout": 0.0,
        "resid_pdrop": 0.0,  # GPT-2's rates are dropout rates too
        "hidden_size": 64,
        "layer_norm_eps": 1e-5,
        "classifier_dropout": 0.0,
    }

"""The hf backend on the toy model: counts, finish reasons, stop strings, seeding."""

import pytest

from rlrecipes.eval.backends import HFBackend, stable_seed
from rlrecipes.generation import Sampling, cut_at_stop


def test_cut_at_stop():
    assert cut_at_stop("abc<|im_end|>def", ["</s>", "<|im_end|>"]) == ("abc", True)
    assert cut_at_stop("a</s>b<|im_end|>", ["<|im_end|>", "</s>"]) == ("a", True)
    assert cut_at_stop("plain", []) == ("plain", False)


def test_stable_seed_is_stable():
    assert stable_seed(0, "math500", "id-1") == stable_seed(0, "math500", "id-1")
    assert stable_seed(0, "math500", "id-1") != stable_seed(1, "math500", "id-1")


@pytest.fixture(scope="module")
def backend(toy_model_dir):
    from omegaconf import OmegaConf

    from rlrecipes.config.schema import ModelConfig
    from rlrecipes.models import load_model

    model, tok = load_model(str(toy_model_dir), OmegaConf.structured(ModelConfig))
    return HFBackend(model, tok, batch_size=8)


PROMPTS = ["<|user|>12+7<|assistant|>", "<|user|>40+41<|assistant|>", "<|user|>3+3<|assistant|>"]


@pytest.mark.integration
def test_greedy_counts_and_length_limit(backend):
    out = backend.generate(PROMPTS, Sampling(n=1, max_new_tokens=2), seeds=[0, 1, 2])
    assert [len(o) for o in out] == [1, 1, 1]
    assert all(c.finish_reason == "length" and c.num_tokens == 2 for o in out for c in o)
    full = backend.generate(PROMPTS, Sampling(n=1, max_new_tokens=24), seeds=[0, 1, 2])
    assert all(c.text.startswith("Answer:") and c.finish_reason == "stop" for o in full for c in o)


@pytest.mark.integration
def test_sampling_is_seeded(backend):
    s = Sampling(n=3, temperature=1.0, max_new_tokens=12)
    a = backend.generate(PROMPTS, s, seeds=[5, 6, 7])
    b = backend.generate(PROMPTS, s, seeds=[5, 6, 7])
    assert [[c.text for c in o] for o in a] == [[c.text for c in o] for o in b]
    assert [len(o) for o in a] == [3, 3, 3]
    assert backend.chunk_size(s) == 2  # batch of 8 sequences / 3 samples per problem


@pytest.mark.integration
def test_stop_strings_are_cut(backend):
    out = backend.generate(PROMPTS[:1], Sampling(n=1, max_new_tokens=24, stop=("wer",)), seeds=[0])
    assert out[0][0].text == "Ans" and out[0][0].finish_reason == "stop"


# --------------------------------------------------------------- backend choice (no vLLM needed)
def test_auto_is_a_backend_and_a_typo_lists_the_valid_ones():
    from rlrecipes.errors import UserError
    from rlrecipes.eval.backends import check_backend

    check_backend("auto")
    with pytest.raises(UserError, match="valid: auto, hf, vllm"):
        check_backend("vlm")


@pytest.mark.integration
def test_auto_falls_back_to_hf_without_vllm(monkeypatch, toy_model_dir):
    import importlib.util

    from rlrecipes.eval.backends import resolve_backend

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    assert resolve_backend("auto", str(toy_model_dir)) == "hf"
    assert resolve_backend("vllm", str(toy_model_dir)) == "vllm"  # an explicit choice stays (and fails its check)


def test_the_eval_default_is_auto():
    from rlrecipes.compose import compose_config

    assert compose_config("eval", []).generation.backend == "auto"


def test_vllm_without_vllm_installed_is_one_line(monkeypatch):
    import importlib.util

    from rlrecipes.errors import UserError
    from rlrecipes.eval.backends import check_backend

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    with pytest.raises(UserError, match="generation.backend=vllm needs vLLM.*make install"):
        check_backend("vllm")

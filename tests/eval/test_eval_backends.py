"""The hf backend: counts, finish reasons and stop strings on a scripted model (its completions
known by construction), seeding on the toy model."""

import pytest

from rlrecipes.eval.backends import stable_seed
from rlrecipes.generation import Completion, HFBackend, Sampling, cut_at_stop, sample_chunks


def test_cut_at_stop():
    assert cut_at_stop("abc<|im_end|>def", ["</s>", "<|im_end|>"]) == ("abc", True)
    assert cut_at_stop("a</s>b<|im_end|>", ["<|im_end|>", "</s>"]) == ("a", True)
    assert cut_at_stop("plain", []) == ("plain", False)


def test_stable_seed_is_stable():
    assert stable_seed(0, "math500", "id-1") == stable_seed(0, "math500", "id-1")
    assert stable_seed(0, "math500", "id-1") != stable_seed(1, "math500", "id-1")


class EchoBackend:
    """Two prompts per chunk; each completion names its prompt and seed."""

    name, tokenizer = "echo", None

    def __init__(self):
        self.calls = []

    def chunk_size(self, sampling):
        return 2

    def generate(self, prompts, sampling, seeds):
        self.calls.append(list(prompts))
        return [[Completion(f"{p}/{s}", 1, "stop")] * sampling.n for p, s in zip(prompts, seeds)]


def test_the_sampling_loop_chunks_by_position_and_seeds_each_prompt():
    backend = EchoBackend()
    chunks = list(sample_chunks(backend, ["a", "b", "c", "d", "e"], [10, 11, 12, 13, 14], Sampling(n=2)))
    assert backend.calls == [["a", "b"], ["c", "d"], ["e"]]
    assert [c.indices for c in chunks] == [[0, 1], [2, 3], [4]]
    assert chunks[2].completions == [[Completion("e/14", 1, "stop")] * 2]
    # a resumed eval: the problems left sit at positions 1, 2, 3 and 5 of the benchmark, so the
    # chunks are those of the whole run ({0, 1}, {2, 3}, {4, 5}), not of the four left
    resumed = EchoBackend()
    left = list(sample_chunks(resumed, ["b", "c", "d", "f"], [1, 2, 3, 5], Sampling(), positions=[1, 2, 3, 5]))
    assert resumed.calls == [["b"], ["c", "d"], ["f"]]
    assert [c.indices for c in left] == [[0], [1, 2], [3]]


def recording_hf_generate(calls):
    """A stand-in for `hf_generate` that records each call's prompts, samples and seed."""

    def hf_generate(model, tokenizer, prompts, sampling, seed=None):
        calls.append((list(prompts), sampling.n, seed))
        return [[Completion(f"{p}{i}", 1, "stop") for i in range(sampling.n)] for p in prompts]

    return hf_generate


def test_generate_completions_takes_batch_size_prompts_a_call_and_seeds_the_first(monkeypatch):
    """Held-out accuracy and the benches draw through the one sampling loop: `batch_size`
    prompts per call whatever `num_samples` is, and `seed` seeds the first call only (later ones
    continue torch's stream, None), as before the loop was shared."""
    import rlrecipes.generation as generation

    calls = []
    monkeypatch.setattr(generation, "hf_generate", recording_hf_generate(calls))
    out = generation.generate_completions(
        None, None, ["a", "b", "c"], max_new_tokens=4, batch_size=2, do_sample=True, num_samples=3, seed=7
    )
    assert calls == [(["a", "b"], 3, 7), (["c"], 3, None)]
    assert out == [["a0", "a1", "a2"], ["b0", "b1", "b2"], ["c0", "c1", "c2"]]
    calls.clear()
    assert generation.generate_completions(None, None, ["a", "b", "c"], max_new_tokens=4, batch_size=2) == [
        ["a0"],
        ["b0"],
        ["c0"],
    ]
    assert calls == [(["a", "b"], 1, None), (["c"], 1, None)]  # no seed: torch's stream is left alone


def hf_backend(folder):
    from omegaconf import OmegaConf

    from rlrecipes.config.schema import ModelConfig
    from rlrecipes.models import load_model

    model, tok = load_model(str(folder), OmegaConf.structured(ModelConfig))
    return HFBackend(model, tok, batch_size=8)


@pytest.fixture(scope="module")
def backend(toy_model_dir):
    return hf_backend(toy_model_dir)


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    """A backend on a model that writes 'Answer: 19' after every chat prompt (tests/helpers/scripted_model.py)."""
    from tests.helpers.scripted_model import answering, scripted_model

    return hf_backend(scripted_model(tmp_path_factory.mktemp("scripted"), answering("19")))


PROMPTS = ["<|user|>12+7<|assistant|>", "<|user|>40+41<|assistant|>", "<|user|>3+3<|assistant|>"]


def test_greedy_counts_and_length_limit(scripted):
    out = scripted.generate(PROMPTS, Sampling(n=1, max_new_tokens=2), seeds=[0, 1, 2])
    assert [[(c.text, c.finish_reason, c.num_tokens) for c in o] for o in out] == [[("An", "length", 2)]] * 3
    full = scripted.generate(PROMPTS, Sampling(n=1, max_new_tokens=24), seeds=[0, 1, 2])
    # ten tokens, then the end of sequence (not counted)
    assert [[(c.text, c.finish_reason, c.num_tokens) for c in o] for o in full] == [[("Answer: 19", "stop", 10)]] * 3


@pytest.mark.integration
def test_sampling_is_seeded(backend):
    s = Sampling(n=3, temperature=1.0, max_new_tokens=12)
    a = backend.generate(PROMPTS, s, seeds=[5, 6, 7])
    b = backend.generate(PROMPTS, s, seeds=[5, 6, 7])
    assert [[c.text for c in o] for o in a] == [[c.text for c in o] for o in b]
    assert [len(o) for o in a] == [3, 3, 3]
    assert backend.chunk_size(s) == 2  # batch of 8 sequences / 3 samples per problem


def test_stop_strings_are_cut(scripted):
    out = scripted.generate(PROMPTS[:1], Sampling(n=1, max_new_tokens=24, stop=("wer",)), seeds=[0])
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

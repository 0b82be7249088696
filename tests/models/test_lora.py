"""LoRA / QLoRA through peft (`model.lora.*`): the config switch, its one-line errors, QLoRA's
CPU refusal, and tiny runs per recipe family that train only the adapter and save one
that `rlrecipes eval` loads."""

import json
from pathlib import Path

import pytest
import torch

from rlrecipes.errors import UserError
from tests.conftest import compose
from tests.eval.test_eval_cli import EVAL_TINY, cli, rlrecipes


# ----------------------------------------------------------------------------- config
@pytest.mark.integration
def test_lora_is_off_by_default_and_when_null():
    from rlrecipes.models.lora import peft_config

    assert compose().model.lora.r == 0 and peft_config(compose().model) is None
    assert compose("model.lora=null").model.lora is None and peft_config(compose("model.lora=null").model) is None


@pytest.mark.integration
def test_a_rank_on_the_command_line_turns_lora_on(capsys):
    """`model.lora.r=8` must compose (Hydra cannot set a key below a null node)."""
    from rlrecipes.models.lora import peft_config

    config = peft_config(compose("model.lora.r=8", "model.lora.dropout=0.05").model)
    assert (config.r, config.lora_alpha, config.lora_dropout) == (8, 32.0, 0.05)
    assert config.target_modules == "all-linear" and config.bias == "none" and config.task_type == "CAUSAL_LM"
    listed = peft_config(compose("model.lora.r=4", "model.lora.target_modules=[q_proj,v_proj]").model)
    assert set(listed.target_modules) == {"q_proj", "v_proj"}
    code, out = cli(capsys, "config", "show", "model.lora.r=8")
    assert code == 0 and "r: 8" in out


@pytest.mark.integration
@pytest.mark.parametrize(
    "override, message",
    [
        ("model.lora.r=-1", r"model.lora.r=-1 must be positive \(0 turns LoRA off\)"),
        ("model.lora.alpha=0", "model.lora.alpha=0.0 must be positive"),
        ("model.lora.dropout=1.0", r"model.lora.dropout=1.0 must be in \[0, 1\)"),
        ("model.lora.bias=some", "model.lora.bias='some'; valid: none, all, lora_only"),
        ("model.lora.target_modules=[]", "model.lora.target_modules is empty"),
    ],
)
def test_bad_lora_settings_are_one_line(override, message):
    from rlrecipes.models.lora import peft_config

    r = [] if override.startswith("model.lora.r=") else ["model.lora.r=8"]
    with pytest.raises(UserError, match=message):
        peft_config(compose(*r, override).model)


def test_qlora_without_cuda_fails_before_any_weights_load(monkeypatch, tmp_path):
    import transformers

    from rlrecipes.models import load_model
    from rlrecipes.models.lora import peft_config

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(
        transformers.AutoModelForCausalLM,
        "from_pretrained",
        lambda *a, **k: pytest.fail("loaded weights before refusing QLoRA"),
    )
    cfg = compose("model.lora.r=8", "model.lora.load_in_4bit=true").model
    with pytest.raises(UserError, match=r"load_in_4bit=true \(QLoRA\) needs a CUDA GPU"):
        load_model(str(tmp_path), cfg)
    with pytest.raises(UserError, match=r"load_in_4bit=true \(QLoRA\) needs a CUDA GPU"):
        peft_config(cfg)  # what the training job checks before it builds or loads a model


@pytest.mark.integration
def test_qlora_composes_the_papers_4bit_settings(monkeypatch):
    """What a CUDA machine with bitsandbytes gets (checked here with both pretended)."""
    import importlib.util

    from rlrecipes.models import lora

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: object() if name == "bitsandbytes" else real_find_spec(name, *a)
    )
    kwargs = lora.quantization_kwargs(compose("model.lora.r=8", "model.lora.load_in_4bit=true").model)
    q = kwargs["quantization_config"]
    assert q.load_in_4bit and q.bnb_4bit_quant_type == "nf4" and q.bnb_4bit_use_double_quant
    assert q.bnb_4bit_compute_dtype == torch.bfloat16 and kwargs["device_map"] == {"": 0}
    assert lora.quantization_kwargs(compose("model.lora.r=8").model) == {}  # plain LoRA: full-precision base
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "bitsandbytes" else real_find_spec(name, *a)
    )
    with pytest.raises(UserError, match="needs bitsandbytes: pip install bitsandbytes"):
        lora.quantization_kwargs(compose("model.lora.r=8", "model.lora.load_in_4bit=true").model)


# ------------------------------------------------------------------------ tiny runs
@pytest.fixture
def built_trainers(monkeypatch):
    """Every RecipeGRPOTrainer a run builds, with a copy of its parameters as built."""
    from rlrecipes.engine.trainer import RecipeGRPOTrainer

    built = []
    original = RecipeGRPOTrainer.__init__

    def spy(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.initial_parameters = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        built.append(self)

    monkeypatch.setattr(RecipeGRPOTrainer, "__init__", spy)
    return built


# Every family trains on something that moves the adapter whatever the toy model samples (a
# sampled signal, such as a split vote or different self-certainties within a group, is a
# chance outcome): the random reward, whose seeded draws are the same on every machine, beside
# the family's own; one_shot keeps its rewards equal (random with gamma 0) so that its entropy
# term is the gradient.
RANDOM = "{name: random, weight: 1.0}"
FAMILIES = {
    "grpo": ["recipe=grpo", "reward=random"],
    # beta > 0: the reference is the base (adapters disabled)
    "ttrl": ["recipe=ttrl", "recipe.n_train=2", f"recipe.rewards=[{{name: majority_vote, weight: 1.0}}, {RANDOM}]"],
    # self-certainty scored on the adapted model, or with the adapters disabled
    "intuitor": ["recipe=intuitor", f"recipe.rewards=[{{name: accuracy, weight: 0.0}}, {RANDOM}]"],
    "intuitor_offline": [
        "recipe=intuitor",
        "recipe.scorer=offline",
        f"recipe.rewards=[{{name: accuracy, weight: 0.0}}, {RANDOM}]",
    ],
    "one_shot": [
        "recipe=one_shot",
        "recipe.whole_set=true",
        "recipe.rewards=[{name: random, weight: 1.0, options: {gamma: 0.0}}]",
    ],
}


def logits(model, tokenizer):
    ids = tokenizer(["12+34=", "7+8="], return_tensors="pt", padding=True)
    with torch.no_grad():
        return model(**ids).logits


@pytest.mark.integration
@pytest.mark.parametrize("family", list(FAMILIES))
def test_tiny_lora_run_trains_only_the_adapter_and_saves_it(family, toy_model_dir, tmp_path, built_trainers):
    from rlrecipes.models import load_model
    from rlrecipes.training.job import train

    run = tmp_path / "run"
    cfg = compose(
        *FAMILIES[family],
        "model.lora.r=4",
        "trainer.max_steps=2",
        "trainer.learning_rate=1e-3",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    summary = train(cfg, run, log=lambda _: None)
    [trainer] = built_trainers
    model = trainer.accelerator.unwrap_model(trainer.model)
    trained = dict(model.named_parameters())
    assert all("lora_" in n for n, p in trained.items() if p.requires_grad)
    base = [n for n in trained if "lora_" not in n]
    adapter = [n for n in trained if "lora_" in n]
    assert base and adapter
    assert all(torch.equal(trained[n], trainer.initial_parameters[n]) for n in base), "a base weight moved"
    assert any(not torch.equal(trained[n], trainer.initial_parameters[n]) for n in adapter), "adapter unchanged"
    assert summary["steps"] == 2
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert all(r["grad_norm"] > 0 for r in rows if "grad_norm" in r)
    if family != "grpo":  # beta > 0: KL to the base, adapters disabled
        assert rows[-1]["kl"] > 0
    if family == "one_shot":  # rewards all 0 and, at step 1, no KL gradient: the entropy term moved the adapter
        assert rows[0]["reward_std"] == 0 and rows[0]["kl"] == 0
    # RUN/model holds the adapter (and tokenizer), not a full model; loading it gives the trained model
    saved = run / "model"
    assert (saved / "adapter_config.json").is_file() and not (saved / "model.safetensors").exists()
    merged, tokenizer = load_model(str(saved), cfg.model)
    assert not hasattr(merged, "peft_config")  # merged into plain weights for generation
    model.eval()
    assert torch.allclose(logits(merged, tokenizer), logits(model, tokenizer), atol=1e-5)


@pytest.mark.integration
def test_saved_adapter_evaluates_and_merged_copy_on_request(toy_model_dir, tmp_path, built_trainers):
    from rlrecipes.training.job import train

    run = tmp_path / "run"
    cfg = compose(
        "model.lora.r=4",
        "model.lora.save_merged=true",
        "trainer.max_steps=1",
        "trainer.eval.before=false",
        "trainer.eval.after=false",
    )
    summary = train(cfg, run, log=lambda _: None)
    merged = run / "model_merged"
    assert (merged / "model.safetensors").is_file() and not (merged / "adapter_config.json").exists()
    assert summary["saved_model"]["adapter"] and summary["saved_model"]["merged"] == str(merged)
    assert 0 < summary["saved_model"]["trainable_parameters"] < 10_000
    out = rlrecipes(
        "eval",
        *EVAL_TINY,
        f"model.name_or_path={run / 'model'}",
        "benchmark=arithmetic",
        "limit=4",
        "protocol.num_samples=1",
        f"run_dir={tmp_path / 'eval'}",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    m = json.loads((tmp_path / "eval" / "summary.json").read_text())["benchmarks"]["arithmetic"]
    assert m["problems"] == 4 and 0 <= m["pass@1"] <= 1


def tiny_adapter(toy_model_dir, folder):
    """A random (non-zero) LoRA adapter on the toy model, saved as a run saves one."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(toy_model_dir),
        LoraConfig(r=2, target_modules="all-linear", init_lora_weights=False),
    )
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(toy_model_dir).save_pretrained(folder)
    return model.eval()


@pytest.mark.integration
def test_adapter_is_merged_once_for_tools_without_peft(toy_model_dir, tmp_path):
    """vLLM loads full-model folders only: an adapter becomes a cached merged folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rlrecipes.models.lora import merged_model_path

    adapted = tiny_adapter(toy_model_dir, tmp_path / "model")
    cfg = compose().model
    assert merged_model_path(str(toy_model_dir), cfg) == str(toy_model_dir)  # a full model: as it is
    logs = []
    merged = merged_model_path(str(tmp_path / "model"), cfg, cache_dir=str(tmp_path / "cache"), log=logs.append)
    assert merged.startswith(str(tmp_path / "cache")) and not (Path(merged) / "adapter_config.json").exists()
    tokenizer = AutoTokenizer.from_pretrained(merged, padding_side="left")
    assert torch.allclose(
        logits(AutoModelForCausalLM.from_pretrained(merged), tokenizer), logits(adapted, tokenizer), atol=1e-5
    )
    logs.clear()
    assert merged_model_path(str(tmp_path / "model"), cfg, cache_dir=str(tmp_path / "cache"), log=logs.append) == merged
    assert logs == []  # cached


@pytest.mark.integration
def test_an_adapter_without_its_tokenizer_loads_the_bases(toy_model_dir, tmp_path):
    from rlrecipes.models import load_model

    adapted = tiny_adapter(toy_model_dir, tmp_path / "model")
    (tmp_path / "model" / "tokenizer_config.json").unlink()  # as other tools save adapters
    for name in ("tokenizer.json", "special_tokens_map.json", "chat_template.jinja"):
        (tmp_path / "model" / name).unlink(missing_ok=True)
    merged, tokenizer = load_model(str(tmp_path / "model"), compose().model)
    assert torch.allclose(logits(merged, tokenizer), logits(adapted, tokenizer), atol=1e-5)


@pytest.mark.integration
def test_an_adapter_whose_base_is_gone_is_one_line(toy_model_dir, tmp_path):
    from rlrecipes.models import load_model

    tiny_adapter(toy_model_dir, tmp_path / "model")
    config = json.loads((tmp_path / "model" / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(tmp_path / "deleted-base")
    (tmp_path / "model" / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(UserError, match="was trained on .*deleted-base, which cannot be loaded"):
        load_model(str(tmp_path / "model"), compose().model)


@pytest.mark.integration
def test_the_command_line_switches_lora_on_and_off(toy_model_dir, tmp_path):
    """`rlrecipes train model.lora.r=4` trains an adapter; `model.lora=null` a full model."""
    from tests.conftest import TINY

    common = [*TINY, "trainer.max_steps=1", "trainer.eval.before=false", "trainer.eval.after=false"]
    for switch, saved in (("model.lora.r=4", "adapter_config.json"), ("model.lora=null", "model.safetensors")):
        run = tmp_path / switch.replace("=", "_")
        out = rlrecipes("train", *common, switch, f"run_dir={run}", cwd=tmp_path)
        assert out.returncode == 0, out.stdout + out.stderr
        assert (run / "model" / saved).is_file(), switch
        assert json.loads((run / "summary.json").read_text())["saved_model"]["adapter"] == (
            saved != "model.safetensors"
        )

"""LoRA and QLoRA through peft, configured by `model.lora` (see `LoraConfig` in the schema).

TRL does the wrapping: `GRPOTrainer(peft_config=peft_config(cfg.model))` calls peft's
`get_peft_model` and, with beta > 0, takes the reference log-probs with the adapters
disabled (no second model). This module only turns the config into peft's objects,
adds QLoRA's 4-bit loading, and saves what a run produces: the adapter (and, on
request, a merged full model that any tool loads without peft).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlrecipes.errors import UserError
from rlrecipes.models.cache import cache_root, cached_folder, digest


def lora_enabled(model_cfg: Any) -> bool:
    lora = model_cfg.get("lora") if hasattr(model_cfg, "get") else getattr(model_cfg, "lora", None)
    return lora is not None and int(lora.r) != 0


def peft_config(model_cfg: Any) -> Any:
    """peft's LoraConfig for `model.lora`, or None when LoRA is off (null or r=0)."""
    if not lora_enabled(model_cfg):
        return None
    lora = model_cfg.lora
    if int(lora.r) < 0:
        raise UserError(f"model.lora.r={lora.r} must be positive (0 turns LoRA off)")
    if not float(lora.alpha) > 0:
        raise UserError(f"model.lora.alpha={lora.alpha} must be positive")
    if not 0 <= float(lora.dropout) < 1:
        raise UserError(f"model.lora.dropout={lora.dropout} must be in [0, 1)")
    if lora.load_in_4bit:  # checked here too: the training job builds this before any model exists
        _require_qlora_support()
    targets = lora.target_modules
    if not isinstance(targets, str):  # an OmegaConf ListConfig: peft wants a plain list
        targets = [str(name) for name in targets]
        if not targets:
            raise UserError("model.lora.target_modules is empty; e.g. all-linear or [q_proj,v_proj]")
    from peft import LoraConfig

    return LoraConfig(
        r=int(lora.r),
        lora_alpha=float(lora.alpha),
        lora_dropout=float(lora.dropout),
        target_modules=targets,
        bias=str(lora.bias),
        task_type="CAUSAL_LM",
    )


def quantization_kwargs(model_cfg: Any) -> dict[str, Any]:
    """Extra `from_pretrained` arguments for QLoRA's 4-bit base; {} without it.

    Checked before any weights load, so a CPU machine fails in one line instead of
    after minutes of loading. The settings are the QLoRA paper's (arXiv 2305.14314):
    NF4 storage, double quantisation, bfloat16 compute.
    """
    if not lora_enabled(model_cfg) or not model_cfg.lora.load_in_4bit:
        return {}
    _require_qlora_support()
    import torch
    from accelerate import PartialState
    from transformers import BitsAndBytesConfig

    config = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    # 4-bit weights are quantised as they load onto a GPU and cannot be moved afterwards:
    # each process loads its copy straight onto its own device
    return {"quantization_config": config, "device_map": {"": PartialState().local_process_index}}


def _require_qlora_support() -> None:
    import importlib.util

    import torch

    if not torch.cuda.is_available():
        raise UserError(
            "model.lora.load_in_4bit=true (QLoRA) needs a CUDA GPU (bitsandbytes' 4-bit kernels); "
            "on this machine use plain LoRA (model.lora.load_in_4bit=false)"
        )
    if importlib.util.find_spec("bitsandbytes") is None:
        raise UserError("model.lora.load_in_4bit=true (QLoRA) needs bitsandbytes: pip install bitsandbytes")


def prepare_quantized(model: Any) -> Any:
    """peft's preparation of a k-bit base for training (norms in fp32, base frozen).

    Gradient checkpointing stays the trainer's decision (`trainer.gradient_checkpointing`,
    which TRL applies to PEFT models itself), so it is not switched on here.
    """
    from peft import prepare_model_for_kbit_training

    return prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)


def is_adapter_folder(path: str | Path) -> bool:
    return (Path(path).expanduser() / "adapter_config.json").is_file()


def adapter_base(path: str) -> str:
    """The base model an adapter folder was trained on (its adapter_config.json)."""
    from peft import PeftConfig

    return PeftConfig.from_pretrained(path).base_model_name_or_path


def load_adapter_merged(path: str, dtype: Any, **kwargs: Any) -> Any:
    """The base model named in `path`'s adapter_config.json + that adapter, merged.

    Merged because evaluation only generates: the LoRA branch would cost a second
    matmul per layer and token, and a merged model is an ordinary transformers model.
    `kwargs` go to the base model's `from_pretrained`.
    """
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = adapter_base(path)
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype, **kwargs)
    except OSError as exc:
        raise UserError(
            f"the adapter in {path} was trained on {base}, which cannot be loaded: {str(exc).splitlines()[0]}"
        ) from None
    merged = PeftModel.from_pretrained(model, path).merge_and_unload()
    # peft froze the base's weights for the adapter's training: a merged model that trains
    # again (full fine-tuning from a LoRA stage's RUN/model) must have them trainable
    return merged.requires_grad_(True)


def merged_model_path(path: str, model_cfg: Any, cache_dir: str | None = None, log: Any = print) -> str:
    """A full-model folder for tools that cannot apply an adapter themselves (vLLM).

    `path` itself unless it holds an adapter; then its merged copy, built once into the
    model cache and keyed by the adapter's files, so a retrained adapter is merged anew.
    """
    if not is_adapter_folder(path):
        return path
    import hashlib

    folder = Path(path).expanduser()
    files = sorted(f for f in folder.iterdir() if f.name.startswith("adapter_"))
    key = {
        "adapter": str(folder.resolve()),
        "dtype": str(model_cfg.dtype),
        "files": {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files},
    }

    def build(tmp: Path) -> None:
        import torch
        from transformers import AutoTokenizer

        dtype = "auto" if model_cfg.dtype == "auto" else getattr(torch, model_cfg.dtype)
        load_adapter_merged(str(folder), dtype).save_pretrained(str(tmp))
        AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(tmp))

    return str(cached_folder(cache_root(cache_dir) / "merged" / digest(key), key, build, log))


def trainable_parameters(model: Any) -> int:
    # ZeRO-3 leaves each rank an empty placeholder per parameter; `ds_numel` is the full size
    return sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters() if p.requires_grad)


def save_trained_model(trainer: Any, tokenizer: Any, out_dir: Path, model_cfg: Any) -> dict[str, Any]:
    """Save the trained model into `out_dir`; returns what summary.json records about it.

    With LoRA, `trainer.save_model` writes the adapter only (adapter_config.json and its
    weights, gathered from every rank when sharded); `rlrecipes eval
    model.name_or_path=RUN/model` loads it onto its base. `model.lora.save_merged` also
    writes a merged full model to `out_dir.parent / "model_merged"`, rebuilt from the
    saved adapter so the trainer's own (possibly sharded) model is left as it is.
    """
    from accelerate.utils import is_peft_model

    out_dir = Path(out_dir)
    model = trainer.accelerator.unwrap_model(trainer.model)
    adapter = is_peft_model(model)
    info: dict[str, Any] = {"adapter": adapter, "trainable_parameters": trainable_parameters(model), "merged": None}
    trainer.save_model(str(out_dir))
    if trainer.args.should_save:  # the main process (transformers' rule for who writes files)
        tokenizer.save_pretrained(str(out_dir))
    if adapter and model_cfg.lora.save_merged:
        merged = out_dir.parent / "model_merged"
        if trainer.args.should_save:
            import torch

            dtype = "auto" if model_cfg.dtype == "auto" else getattr(torch, model_cfg.dtype)
            load_adapter_merged(str(out_dir), dtype).save_pretrained(str(merged))
            tokenizer.save_pretrained(str(merged))
        trainer.accelerator.wait_for_everyone()
        info["merged"] = str(merged)
    return info

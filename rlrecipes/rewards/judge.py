"""A judge model as a reward: `judge` (pointwise or pairwise against the reference answer)
and QwenLong-L1's hybrid `judge_hybrid` (rule-based match OR the judge's match).

This is what J1 (arXiv 2505.10320) trains judges for: rewarding answers no rule can check.
Settings come from the reward's `options` (conf/reward/judge.yaml):

    model          the judge (hub id or folder; e.g. a `recipe=j1` run's RUN/model), required
    format         pointwise: reward = score / 10, the judge scoring the response with the
                   reference answer shown; pairwise: the response against the reference
                   answer ("Answer: <gold>"), judged in both orders, reward = the share of the
                   orders whose verdict prefers the response (0, 0.5, 1)
    prompt         the judge's prompt style (j1 | compact; rlrecipes/judge/prompts.py)
    template       how the judge prompt is wrapped (chat | plain)
    max_new_tokens, batch_size, device (null: cuda if available)
    timeout_s      wall-clock seconds per reward call: rows whose judging has not started by
                   then get no reward (None), as do rows whose judgement does not parse; the
                   engine's reward guard counts them (reward_failures/<name>) and stops the run
                   past trainer.reward_guard.max_failure_rate
    threshold      judge_hybrid only: the judge's reward counts as a match when >= threshold

Every judged row is logged with the policy's sample to RUN/judge_verdicts.jsonl (one file
per process): the policy's prompt and completion, the gold answer, the judge's outputs,
their parse statuses and the reward. The judge runs greedy through transformers
(`rlrecipes.generation.sample_chunks` over `HFBackend`), in its own model copy, batched.

QwenLong-L1 (arXiv 2505.17667; the combination rule is from secondary sources): reward =
max(rule-based verification, judge match), so the judge is asked only about responses the
rule rejects, raising recall without lowering the rule's precision.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import torch
from omegaconf import OmegaConf

from rlrecipes.config.schema import ModelConfig
from rlrecipes.data.templates import render_prompt
from rlrecipes.errors import ConfigError
from rlrecipes.generation import HFBackend, Sampling, sample_chunks
from rlrecipes.judge.prompts import pairwise_prompt, pointwise_prompt
from rlrecipes.judge.verdicts import Judgement, parse
from rlrecipes.models import load_model
from rlrecipes.rewards import RewardContext, RewardFn, register_reward

JUDGE_FORMATS = ("pointwise", "pairwise")


@dataclass
class JudgeRewardOptions:
    """The reward's `options` as declared to the reward registry; None = the default below
    (every key is listed in conf/reward/judge*.yaml so that each can be overridden)."""

    model: Optional[str] = None
    format: Optional[str] = None
    prompt: Optional[str] = None
    template: Optional[str] = None
    max_new_tokens: Optional[int] = None
    batch_size: Optional[int] = None
    device: Optional[str] = None
    timeout_s: Optional[float] = None
    threshold: Optional[float] = None


@dataclass(frozen=True)
class JudgeRewardSettings:
    model: str = ""
    format: str = "pointwise"
    prompt: str = "j1"
    template: str = "chat"
    max_new_tokens: int = 1024
    batch_size: int = 32
    device: str | None = None
    timeout_s: float = 600.0
    threshold: float = 0.5

    @classmethod
    def from_options(cls, options: Mapping[str, Any], name: str) -> JudgeRewardSettings:
        valid = [f.name for f in fields(cls)]
        unknown = [k for k in options if k not in valid]
        if unknown:
            raise ConfigError(f"reward {name}: unknown option {unknown[0]!r}; valid: {', '.join(valid)}")
        settings = cls(**{k: v for k, v in dict(options).items() if v is not None})  # null: the default
        if not settings.model:
            raise ConfigError(f"reward {name} needs options.model (the judge: a hub id or a model folder)")
        if settings.format not in JUDGE_FORMATS:
            raise ConfigError(f"reward {name}: options.format={settings.format!r}; valid: {', '.join(JUDGE_FORMATS)}")
        if settings.prompt not in ("j1", "compact"):
            raise ConfigError(f"reward {name}: options.prompt={settings.prompt!r}; valid: j1, compact")
        return settings


class Judge:
    """The judge model (loaded on first use) and its greedy, batched, deadline-bounded judging."""

    def __init__(self, settings: JudgeRewardSettings, seed: int = 0):
        self.settings, self.seed = settings, seed
        self.model = self.tokenizer = None

    def _load(self) -> None:
        cfg = OmegaConf.structured(ModelConfig)
        cfg.name_or_path, cfg.builder, cfg.dtype = self.settings.model, None, "auto"
        device = self.settings.device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model, self.tokenizer = load_model(self.settings.model, cfg, device=device)

    def outputs(self, user_messages: Sequence[str]) -> list[str | None]:
        """The judge's output per message; None for those not started before the deadline."""
        if self.model is None:
            self._load()
        s = self.settings
        prompts = [render_prompt(m, s.template, self.tokenizer) for m in user_messages]
        backend = HFBackend(self.model, self.tokenizer, batch_size=s.batch_size)
        deadline = time.monotonic() + s.timeout_s
        out: list[str | None] = [None] * len(prompts)
        chunks = sample_chunks(backend, prompts, [self.seed] * len(prompts), Sampling(max_new_tokens=s.max_new_tokens))
        # each batch reseeds torch; the judge runs inside the policy's training process, whose
        # random stream (transformers' sampling of the next rollouts) must go on as if it had not
        with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
            # the deadline is checked before each chunk: `sample_chunks` generates one only when asked
            while time.monotonic() <= deadline and (chunk := next(chunks, None)) is not None:
                for i, group in zip(chunk.indices, chunk.completions):
                    out[i] = group[0].text
        return out


def judge_rewards(
    judge: Judge, questions: Sequence[str], completions: Sequence[str], golds: Sequence[Any]
) -> tuple[list[float | None], list[dict[str, Any]]]:
    """The reward per completion, and a log record per completion."""
    s = judge.settings
    messages: list[str] = []
    for q, c, g in zip(questions, completions, golds):
        if s.format == "pointwise":
            question = q if g is None else f"{q}\n\n(Reference answer: {g})"
            messages.append(pointwise_prompt(question, c, s.prompt))
        else:
            reference = f"Answer: {g}"
            messages += [
                pairwise_prompt(q, c, reference, "pairwise", s.prompt),
                pairwise_prompt(q, reference, c, "pairwise", s.prompt),
            ]
    texts = judge.outputs(messages)
    per_row = 1 if s.format == "pointwise" else 2
    rewards, records = [], []
    for i, completion in enumerate(completions):
        outputs = texts[i * per_row : (i + 1) * per_row]
        judged = [parse(t, s.format) if t is not None else Judgement("timeout") for t in outputs]
        reward = _reward(judged, s.format)
        rewards.append(reward)
        records.append(
            {
                "completion": completion,
                "answer": golds[i],
                "judge_outputs": outputs,
                "statuses": [j.status for j in judged],
                "reward": reward,
            }
        )
    return rewards, records


def _reward(judged: Sequence[Judgement], fmt: str) -> float | None:
    if fmt == "pointwise":
        return judged[0].score / 10 if judged[0].ok else None
    # order 1 shows the response as A, order 2 as B: a vote for the response in each
    votes = [j.verdict == want for j, want in zip(judged, ("A", "B")) if j.ok]
    return sum(votes) / len(votes) if votes else None


class VerdictLog:
    """Appends the judged rows to RUN/judge_verdicts.jsonl (RUN/judge_verdicts.rank<N>.jsonl off rank 0)."""

    def __init__(self, run_dir: Any):
        rank = int(os.environ.get("RANK", "0"))
        name = "judge_verdicts.jsonl" if rank == 0 else f"judge_verdicts.rank{rank}.jsonl"
        self.path = None if run_dir is None else Path(run_dir) / name
        self.calls = 0

    def write(self, reward_name: str, prompts: Sequence[Any], records: list[dict[str, Any]]) -> None:
        self.calls += 1
        if self.path is None:
            return
        with open(self.path, "a") as f:
            for prompt, record in zip(prompts, records):
                f.write(json.dumps({"reward": reward_name, "call": self.calls, "prompt": prompt, **record}) + "\n")


def _questions(prompts: Sequence[Any], columns: Mapping[str, Any]) -> list[str]:
    """The raw problem when the rows carry it, else the policy's rendered prompt."""
    problems = columns.get("problem")
    if problems is not None:
        return [str(p) for p in problems]
    return [p if isinstance(p, str) else p[-1]["content"] for p in prompts]


@register_reward("judge", params=JudgeRewardOptions)
def _judge(ctx: RewardContext) -> RewardFn:
    settings = JudgeRewardSettings.from_options(asdict(ctx.params), "judge")
    judge, log = Judge(settings, ctx.seed), VerdictLog(ctx.run_dir)

    def reward(prompts: list, completions: list[str], answer: list[Any], **columns: Any) -> list[float | None]:
        rewards, records = judge_rewards(judge, _questions(prompts, columns), completions, answer)
        log.write("judge", prompts, records)
        return rewards

    return reward


@register_reward("judge_hybrid", params=JudgeRewardOptions)
def _judge_hybrid(ctx: RewardContext) -> RewardFn:
    settings = JudgeRewardSettings.from_options(asdict(ctx.params), "judge_hybrid")
    judge, log = Judge(settings, ctx.seed), VerdictLog(ctx.run_dir)

    def reward(prompts: list, completions: list[str], answer: list[Any], **columns: Any) -> list[float | None]:
        rule = [None if g is None else float(ctx.verify(c, g)) for c, g in zip(completions, answer)]
        ask = [i for i, r in enumerate(rule) if r == 0.0]  # the rule accepts the rest already
        questions = _questions(prompts, columns)
        judged, records = judge_rewards(
            judge, [questions[i] for i in ask], [completions[i] for i in ask], [answer[i] for i in ask]
        )
        out = list(rule)
        for i, value in zip(ask, judged):
            out[i] = None if value is None else float(value >= settings.threshold)
        log.write("judge_hybrid", [prompts[i] for i in ask], records)
        return out

    return reward

"""The behaviour counter of Cognitive Behaviors (arXiv 2503.01307) as a monitor: add it with
weight 0 (`recipe.rewards=[{name: accuracy}, {name: behaviours, weight: 0}]`) and every step
logs `behaviours/<name>`, the share of that step's completions showing each of the four
behaviours (verification, backtracking, subgoal setting, backward chaining). Its value per
completion is the number of behaviours shown (0-4), logged as `rewards/behaviours/mean`.

Two classifiers (`options.classifier`):

- `rule` (the default): the toy model's trace grammar (`rlrecipes.data.priming`), no model.
  It also logs whether the search shown is carried out: `behaviours/steps_right`,
  `behaviours/verdicts_right` and `behaviours/oks_right`, the shares of the step's search
  lines whose arithmetic holds, of its verdicts that are right and of its `ok`s that are
  (`rlrecipes.data.priming.check_search`; left out when there is none to check).
- `llm`: the paper's classifier prompts (`rlrecipes.rewards.behaviour_prompts`), one per
  behaviour and completion, answered by `options.classifier_model` through the judge's
  generation path (`rlrecipes.rewards.judge.Judge`: greedy, batched, deadline-bounded). A
  behaviour is shown when its `<count>` is above 0; `behaviours/<name>_count` also logs the
  mean count, the paper's figure. The numbers and target come from the prompt in the
  authors' Countdown wording, or from a toy answer "a,b,c=t"; a completion with neither, or
  whose classifier ran out of time, is left out of the step's shares and scores None.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from rlrecipes.data.priming import BEHAVIOURS, behaviours, search_shares
from rlrecipes.errors import ConfigError
from rlrecipes.rewards import RewardContext, RewardFn, register_reward
from rlrecipes.rewards.behaviour_prompts import classifier_prompts, parse_count
from rlrecipes.rewards.countdown import countdown_problem
from rlrecipes.rewards.judge import Judge, JudgeRewardSettings

CLASSIFIERS = ("rule", "llm")
Generate = Callable[[Sequence[str]], list]  # user messages -> the classifier's texts (None: not run)
Problem = tuple[list[int], int]


@dataclass
class BehaviourOptions:
    """The reward's `options` (`{name: behaviours, weight: 0, options: {...}}`)."""

    classifier: str = "rule"  # rule | llm
    classifier_model: Optional[str] = None  # llm: a hub id or model folder (the paper: gpt-4o-mini)
    classifier_template: str = "chat"  # how each prompt is wrapped for it (chat | plain)
    classifier_max_new_tokens: int = 512  # the authors' max_tokens (gpt_api_eval.py l.80)
    classifier_batch_size: int = 32
    classifier_device: Optional[str] = None  # null: cuda if available
    classifier_timeout_s: float = 600.0  # per step; completions not reached score None
    # llm: completions classified per step, a seeded sample (the authors read 200 per
    # checkpoint, gpt_api_eval.py l.39-40); null: every one
    classifier_max_completions: Optional[int] = None


def behaviour_shares(completions: list[str]) -> dict[str, float]:
    """{behaviour: share of `completions` showing it}, by the rule-based grammar."""
    found = [behaviours(text) for text in completions]
    return {name: sum(f[name] for f in found) / len(found) for name in BEHAVIOURS} if found else {}


def search_soundness(completions: list[str], prompts: list | None, answers: list | None) -> dict[str, float]:
    """Whether the toy's search is carried out, not only shown (`search_shares`: steps,
    verdicts and `ok`s right), over the completions whose Countdown problem is known."""
    problems = map(countdown_of, prompts or [None] * len(completions), answers or [None] * len(completions))
    known = [(text, p[1]) for text, p in zip(completions, problems) if p is not None]
    return search_shares([text for text, _ in known], [target for _, target in known])


def countdown_of(prompt: Any, answer: Any) -> Problem | None:
    """(numbers, target) of a rollout: from the prompt in the authors' wording, else from a
    toy Countdown answer "a,b,c=t"."""
    text = prompt if isinstance(prompt, str) else " ".join(str(m.get("content", "")) for m in prompt or [])
    found = countdown_problem(text)
    if found is None and isinstance(answer, str) and answer.count("=") == 1:
        numbers, target = answer.split("=")
        try:
            found = [int(n) for n in numbers.split(",")], int(target)
        except ValueError:
            return None
    return found


def llm_counts(problems: Sequence[Problem | None], completions: Sequence[str], generate: Generate) -> list:
    """Per completion, {behaviour: count} from the classifier (None for a completion without
    a problem or with an output missing): four prompts per completion, one generate call."""
    asked = [i for i, p in enumerate(problems) if p is not None]
    messages = [m for i in asked for m in classifier_prompts(*problems[i], completions[i])]
    texts = list(generate(messages)) if messages else []
    out: list[dict[str, int] | None] = [None] * len(completions)
    for k, i in enumerate(asked):
        outputs = texts[k * len(BEHAVIOURS) : (k + 1) * len(BEHAVIOURS)]
        if len(outputs) == len(BEHAVIOURS) and all(t is not None for t in outputs):
            out[i] = {name: parse_count(t) for name, t in zip(BEHAVIOURS, outputs)}
    return out


def log_llm_counts(counts: Sequence[dict[str, int] | None], log_metric: Any) -> None:
    found = [c for c in counts if c is not None]
    if log_metric is None or not found:
        return
    for name in BEHAVIOURS:
        log_metric(f"behaviours/{name}", sum(c[name] > 0 for c in found) / len(found))
        log_metric(f"behaviours/{name}_count", sum(c[name] for c in found) / len(found))


def llm_behaviour_reward(generate: Generate, max_completions: int | None = None, seed: int = 0) -> RewardFn:
    """The counter with the LLM classifier behind `generate` (tests pass a scripted one)."""
    rng = random.Random(seed)

    def reward(prompts: list, completions: list[str], log_metric: Any = None, **kw: Any) -> list[float | None]:
        answers = kw.get("answer") or [None] * len(completions)
        problems = [countdown_of(p, a) for p, a in zip(prompts, answers)]
        if max_completions is not None:
            candidates = [i for i, p in enumerate(problems) if p is not None]
            keep = set(rng.sample(candidates, min(max_completions, len(candidates))))
            problems = [p if i in keep else None for i, p in enumerate(problems)]
        counts = llm_counts(problems, completions, generate)
        log_llm_counts(counts, log_metric)
        return [None if c is None else float(sum(v > 0 for v in c.values())) for c in counts]

    return reward


def _judge_generate(options: BehaviourOptions, seed: int) -> Generate:
    settings = JudgeRewardSettings(
        model=str(options.classifier_model),
        template=options.classifier_template,
        max_new_tokens=options.classifier_max_new_tokens,
        batch_size=options.classifier_batch_size,
        device=options.classifier_device,
        timeout_s=options.classifier_timeout_s,
    )
    return Judge(settings, seed).outputs


def check_options(options: BehaviourOptions) -> None:
    if options.classifier not in CLASSIFIERS:
        raise ConfigError(
            f"reward behaviours: options.classifier={options.classifier!r}; valid: {', '.join(CLASSIFIERS)}"
        )
    if options.classifier == "llm" and not options.classifier_model:
        raise ConfigError(
            "reward behaviours: options.classifier=llm needs options.classifier_model (a hub id or folder)"
        )
    if options.classifier_template not in ("chat", "plain"):
        raise ConfigError(
            f"reward behaviours: options.classifier_template={options.classifier_template!r}; valid: chat, plain"
        )
    for key in ("classifier_max_new_tokens", "classifier_batch_size", "classifier_max_completions"):
        value = getattr(options, key)
        if value is not None and value < 1:
            raise ConfigError(f"reward behaviours: options.{key}={value} must be at least 1")


@register_reward("behaviours", needs_answer=False, params=BehaviourOptions)
def _behaviours(ctx: RewardContext) -> RewardFn:
    options = ctx.params or BehaviourOptions()
    check_options(options)
    if options.classifier == "llm":  # the model loads on the first call, not here
        return llm_behaviour_reward(_judge_generate(options, ctx.seed), options.classifier_max_completions, ctx.seed)

    def reward(completions: list[str], log_metric: Any = None, **kw: Any) -> list[float]:
        if log_metric is not None and completions:
            soundness = search_soundness(completions, kw.get("prompts"), kw.get("answer"))
            for name, share in {**behaviour_shares(completions), **soundness}.items():
                log_metric(f"behaviours/{name}", share)
        return [float(sum(behaviours(text).values())) for text in completions]

    return reward

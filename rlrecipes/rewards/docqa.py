"""QwenLong-L1's reward on DocQA-RL-1.6K: three domain rules, and a judge where the authors
ask one (Wan et al. 2025, arXiv 2505.17667 §3.3; Tongyi-Zhiwen/QwenLong-L1 at 38d0806, the
files of verl/verl/utils/reward_score/ named below).

`_default_compute_score` picks the rule by the row's data source (__init__.py:43-51):

- multiple choice (`long_toc_choices`, the logical-reasoning third; long.py:82-138): the text
  after the last `</think>` (long.py:15-20; none: 0), asterisks dropped, must say "The correct
  answer is (X)" or "The correct answer is X" with X in A-D (:33-42); right when its letter is
  the gold's, read the same way: 1, else 0. No judge.
- DocMath (`docmath`; docmath.py:349-401): the number after "the answer is" (any case, :163),
  normalised (:41-130) and compared with the gold's (:208-235): equal up to a power of ten
  (:191-192), a percentage or thousands slip (x100, x1000, x100000 within 0.15 %, :194-199),
  equal after rounding up to 3 decimals (:201-202), or within 0.15 % of it (:172-177, 204).
- multi-hop QA (`multihoprag`, `musique`; docqa.py:255-308): the text after the last "the
  answer is" (this case only, :137-144), SQuAD-normalised (:36-51); right when either holds
  the other (sub_em, :75-78).

The training run sets LLM_JUDGE=Y (README.md:238), so for DocMath and multi-hop QA an answer
the rule rejects goes to the judge, reward = max(rule, judge) (docmath.py:382-385, docqa.py:
289-292): a small instruct model (Qwen2.5-1.5B-Instruct, README.md:224-226, 241), greedy
(temperature 0, docmath.py:340), is asked whether the two extracted answers are equivalent
(its system prompt :11-19, the message :21-25, the question cut from the prompt between
"</text>" and "Format your response as follows:" :334-336) and counts when its output holds
"YES" (:344-347). Options: `model` (the judge; null: the rules alone, LLM_JUDGE=N),
`max_new_tokens`, `batch_size`, `device`, `timeout_s` (rlrecipes.rewards.judge.Judge's).

Differences, all where the authors' code would raise or run model text: the rows carry no
data source (the data layer keeps id, problem and answer), so the domain is read from the
gold's form, which tells DocQA-RL-1.6K's three apart (`domain_of`; a `data_source` column,
when a row has one, decides as the authors' does); a gold without its "the answer is" /
"The correct answer is" phrase, which the authors' parse misses (then raising for DocMath
and multi-hop), is read as the answer itself; DocMath's normalisation reads numbers with
`ast.literal_eval` where the authors call `eval` on the string (:110), which for the strings
the answer pattern captures (symbols, a sign, digits, dots, commas) gives the same value;
a question without the two markers, where `str.index` would raise, is the whole prompt; a
judge past its deadline gives no reward (None), which the reward guard counts.
"""

from __future__ import annotations

import ast
import math
import re
import string
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence

from rlrecipes.data.templates import render_prompt
from rlrecipes.rewards import RewardContext, RewardFn, register_reward
from rlrecipes.rewards.judge import Judge, JudgeRewardOptions, JudgeRewardSettings

CHOICE, DOCMATH, MULTIHOP = "choice", "docmath", "multihop"


# ------------------------------------------------------------------ multiple choice (long.py)
def after_think(text: str) -> str | None:
    """The final answer: what follows the last `</think>`, stripped; None without one."""
    return text.split("</think>")[-1].strip() if "</think>" in text else None


def choice_letter(text: str) -> str | None:
    text = text.replace("*", "")
    match = re.search(r"The correct answer is \(([A-D])\)", text) or re.search(r"The correct answer is ([A-D])", text)
    return match.group(1) if match else None


def choice_score(completion: str, gold: str) -> float:
    answer = after_think(completion)
    if not answer:
        return 0.0
    predicted, wanted = choice_letter(answer), choice_letter(gold) or choice_letter(f"The correct answer is {gold}")
    return float(predicted is not None and wanted is not None and predicted.lower() == wanted.lower())


# --------------------------------------------------------------------------- DocMath (docmath.py)
_NUMBER = re.compile(r"the answer is (\=?\≈?\`?\%?\$?\°?\£?\€?\¥?-?[0-9\.,]+)", re.IGNORECASE)


def docmath_answer(text: str) -> str | None:
    match = _NUMBER.search(text.replace("*", ""))
    return match.group(1).replace(",", "").rstrip(".") if match else None


def normalize_number(prediction: str) -> Any:
    """docmath.py:41-130 on an answer string: a number, a bool, or 0 when it reads as neither."""
    prediction = prediction.strip().rstrip(".")
    for money in ["£", "€", "¥", "million", "billion", "thousand", "US", "USD", "RMB"]:
        prediction = prediction.replace(money, "")
    for mark in ("=", "≈"):
        if mark in prediction:
            prediction = prediction.split(mark)[-1].strip()
    for mark in ("`", "%", "$", "°"):
        prediction = prediction.replace(mark, "")
    if prediction in ["true", "yes", "false", "no"]:
        prediction = "True" if prediction in ("true", "yes") else "False"
    if "True" in prediction or "False" in prediction:
        prediction = "True" if "True" in prediction else "False"
    if "approximately" in prediction:
        prediction = prediction.replace("approximately", "").strip()
    if " or " in prediction:
        prediction = prediction.split(" or ")[0]
    for match, take in (
        (r"[-+]?(?:[\d,]*\.*\d+) [^0-9 ]+$", r"([-+]?(?:[\d,]*\.*\d+)) [^0-9 ]+$"),
        (r"[^0-9 ]+ [-+]?(?:[\d,]*\.*\d+)$", r"[^0-9 ]+ ([-+]?(?:[\d,]*\.*\d+))$"),
        (r"[-+]?(?:[\d,]*\.*\d+)[^\d]{1,2}$", r"([-+]?(?:[\d,]*\.*\d+))[^\d]{1,2}$"),
        (r"[^-+\d]{1,2}(?:[\d,]*\.*\d+)$", r"[^-+\d]{1,2}((?:[\d,]*\.*\d+))$"),
    ):  # units before or after the number dropped (:81-88)
        if re.match(match, prediction):
            prediction = re.search(take, prediction).group(1)
    if re.match(r"^[-+]?(\d{1,3}(,\d{3})*|(\d+))(\.\d+)?$", prediction):
        prediction = prediction.replace(",", "")
    try:
        value = ast.literal_eval(prediction or "0")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = 0
    return value if isinstance(value, (bool, int, float)) else 0


def _within(pred: float, gt: float) -> bool:
    eps = abs(gt) * 0.0015
    return gt - eps <= pred <= gt + eps


def numbers_match(p: Any, gt: float) -> bool:
    """compare_two_numbers (docmath.py:179-206)."""
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        return False
    try:
        v1, v2 = max(abs(gt), abs(p)), min(abs(gt), abs(p))
        if v1 != 0 and v2 != 0 and int(math.log10(v1) - math.log10(v2)) == (math.log10(v1) - math.log10(v2)):
            return True
        if (
            (v2 <= v1 / 50 and _within(v2 * 100, v1))
            or (v2 <= v1 / 500 and _within(v2 * 1000, v1))
            or (v2 <= v1 / 50000 and _within(v2 * 100000, v1))
        ):
            return True
        if math.ceil(v1 * 1000) / 1000 == math.ceil(v2 * 1000) / 1000:
            return True
        return _within(p, gt)
    except OverflowError:
        return False


def docmath_score(completion: str, gold: str) -> tuple[float, str | None, str | None]:
    """The rule's score and the two extracted answers (the judge's inputs)."""
    answer = after_think(completion)
    predicted = docmath_answer(answer) if answer else None
    wanted = docmath_answer(gold) or docmath_answer(f"the answer is {gold}")
    if not predicted or wanted is None:
        return 0.0, predicted, wanted
    p, gt = normalize_number(predicted), normalize_number(wanted)
    if isinstance(gt, bool):
        return float(p == gt), predicted, wanted
    return float(numbers_match(p, gt)), predicted, wanted


# ------------------------------------------------------------------- multi-hop QA (docqa.py)
def qa_answer(text: str) -> str | None:
    text = text.replace("*", "")
    if "the answer is" not in text:
        return None
    tail = text.rsplit("the answer is", 1)[-1].strip()
    return tail.replace("<｜Assistant｜>", "").replace("<｜end▁of▁sentence｜>", "").strip().strip(".").strip()


def squad_normalize(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def sub_em(prediction: str, gold: str) -> bool:
    p, g = squad_normalize(prediction), squad_normalize(gold)
    return g in p or p in g


def multihop_score(completion: str, gold: str) -> tuple[float, str | None, str | None]:
    answer = after_think(completion)
    predicted = qa_answer(answer) if answer else None
    wanted = qa_answer(gold) or gold.strip()
    if not predicted:
        return 0.0, predicted, wanted
    return float(sub_em(predicted, wanted)), predicted, wanted


# ----------------------------------------------------------------------------- routing, judge
def domain_of(gold: str, data_source: str | None = None) -> str:
    """The rule for a row: by its data source as __init__.py:43-51 routes when the row has
    one; else by the gold's form: a choice letter, a number, or text."""
    if data_source:
        if "long_toc_choices" in data_source:
            return CHOICE
        if "docmath" in data_source:
            return DOCMATH
        if "multihoprag" in data_source or "musique" in data_source:
            return MULTIHOP
        raise ValueError(f"data source {data_source!r} has no QwenLong-L1 rule (__init__.py:43-53)")
    if choice_letter(gold) or re.fullmatch(r"\(?[A-D]\)?", gold.strip()):
        return CHOICE
    if docmath_answer(gold) or re.fullmatch(r"[-+]?[0-9][0-9.,]*", gold.strip()):
        return DOCMATH
    return MULTIHOP


def question_of(problem: str) -> str:
    """The question the judge sees: the prompt between "</text>" and "Format your response as
    follows:" (docmath.py:334-336), or the whole prompt without them."""
    try:
        start, end = problem.index("</text>"), problem.index("Format your response as follows:")
    except ValueError:
        return problem.strip()
    return problem[start:end].replace("</text>", "").strip()


# docmath.py:11-19 and docqa.py:20-28, verbatim
ORM_SYSTEM = """You are an expert in verifying if two answers are the same.
Your input is a problem and two answers, Answer 1 and Answer 2. You need to check if they are equivalent.
Your task is to determine if two answers are equivalent, without attempting to solve the original problem.
Compare the answers to verify they represent identical values or meaning, even when written in different forms or notations.

Your output must follow the following format:
1) Provide an explanation for why the answers are equivalent or not.
2) Then provide your final answer in the form of: [[YES]] or [[NO]]
"""
ORM_USER = "\nProblem: {problem}\nAnswer 1: {answer_1}\nAnswer 2: {answer_2}\n"  # docmath.py:21-25


class Judges(Protocol):
    def outputs(self, user_messages: Sequence[str]) -> list[str | None]: ...


def docqa_rewards(
    completions: Sequence[str],
    golds: Sequence[str],
    problems: Sequence[str],
    judge: Judges | None = None,
    data_sources: Sequence[str | None] | None = None,
) -> list[float | None]:
    """Each completion's reward: its domain's rule, then, for DocMath and multi-hop rows the
    rule rejects with an answer extracted, the judge (when given): max(rule, judge)."""
    sources = data_sources or [None] * len(golds)
    out: list[float | None] = []
    asks: list[tuple[int, str]] = []
    for i, (completion, gold, source) in enumerate(zip(completions, golds, sources)):
        domain = domain_of(str(gold), source)
        if domain == CHOICE:
            out.append(choice_score(completion, str(gold)))
            continue
        score, predicted, wanted = (docmath_score if domain == DOCMATH else multihop_score)(completion, str(gold))
        out.append(score)
        if score < 1.0 and predicted and judge is not None:
            asks.append((i, ORM_USER.format(problem=question_of(problems[i]), answer_1=predicted, answer_2=wanted)))
    if asks:
        for (i, _), said in zip(asks, judge.outputs([message for _, message in asks])):
            out[i] = None if said is None else max(out[i], float("YES" in said))
    return out


# ------------------------------------------------------------------------------- the reward
@dataclass
class DocQAOptions:
    """The judge's settings, those of `reward=judge` (null: JudgeRewardSettings' default)."""

    model: Optional[str] = JudgeRewardOptions.model  # the judge; null: the three rules alone (LLM_JUDGE=N)
    max_new_tokens: Optional[int] = JudgeRewardOptions.max_new_tokens
    batch_size: Optional[int] = JudgeRewardOptions.batch_size
    device: Optional[str] = JudgeRewardOptions.device
    timeout_s: Optional[float] = JudgeRewardOptions.timeout_s


class OrmJudge(Judge):
    """The judge model asked with QwenLong-L1's system prompt, under its own chat template
    (its settings' template is "plain": the messages come rendered)."""

    def outputs(self, user_messages: Sequence[str]) -> list[str | None]:
        if self.model is None:
            self._load()
        return super().outputs([render_prompt(m, "chat", self.tokenizer, ORM_SYSTEM) for m in user_messages])


def orm_judge(options: DocQAOptions, seed: int = 0) -> OrmJudge | None:
    """The judge of `options` (None without a model: the rules alone)."""
    if not options.model:
        return None
    given = {k: v for k, v in vars(options).items() if k != "model" and v is not None}
    return OrmJudge(JudgeRewardSettings(model=options.model, template="plain", **given), seed)


@register_reward("docqa", params=DocQAOptions)
def _docqa(ctx: RewardContext) -> RewardFn:
    judge = orm_judge(ctx.params, ctx.seed)

    def reward(prompts: list, completions: list[str], answer: list[Any], **columns: Any) -> list[float | None]:
        problems = columns.get("problem") or [p if isinstance(p, str) else p[-1]["content"] for p in prompts]
        return docqa_rewards(completions, answer, [str(p) for p in problems], judge, columns.get("data_source"))

    return reward

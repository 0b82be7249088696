"""Judge prompts: the output formats of J1 (arXiv 2505.10320, §2 and App. B) and RM-R1's
chain-of-rubrics (arXiv 2505.02387, RM-R1-UIUC/RM-R1), as user messages.

Formats (`recipe.judge`), each naming what the judge must end with:
- `pairwise` (J1's PaV): `<answer>[[A]]</answer>` or `<answer>[[B]]</answer>`;
- `pairwise_scores` (PaS): `<score_A>s</score_A><score_B>s</score_B>`, s in [0, 10]
  (0.1 precision), the verdict is the higher score;
- `pointwise` (PoS): one response, `<score>s</score>`, s in [0, 10];
- `multitask` (training only, J1-Qwen-32B-MultiTask): PaS and PoS rows of every pair together.

Styles (`recipe.prompt`):
- `j1`: think inside `<think>...</think>` first, then the format's tags (the structure of
  the paper's seed prompts; the wording here is ours, not the appendix's text);
- `rm_r1`: RM-R1's chain of rubrics: classify the task (`<type>Chat</type>` or
  `<type>Reasoning</type>`), write rubrics (`<rubric>`) or an own solution
  (`<solution>`), evaluate (`<eval>`), then `<answer>[[A]]</answer>` (pairwise only);
- `compact`: a few characters per field for the toy judge (a character-level model with a
  512-token context), same output tags, no thinking.
"""

from __future__ import annotations

from rlrecipes.choice import Choice
from rlrecipes.errors import ConfigError, UserError


class JudgeFormat(Choice):  # `recipe.judge`, `judge-eval --judge` (the module doc)
    pairwise = "pairwise"  # PaV: <answer>[[A]]</answer>
    pairwise_scores = "pairwise_scores"  # PaS: <score_A>..</score_A><score_B>..</score_B>
    pointwise = "pointwise"  # PoS: <score>..</score>, one response
    # training only (J1-Qwen-32B-MultiTask): every pair as PaS rows (both orders) and PoS rows (both responses)
    multitask = "multitask"


class PromptStyle(Choice):  # `recipe.prompt`, `judge-eval --prompt` (the module doc)
    j1 = "j1"  # think, then the format's tags
    rm_r1 = "rm_r1"  # RM-R1's chain of rubrics (pairwise)
    compact = "compact"  # the toy judge's few characters


MULTITASK = JudgeFormat.multitask.value
FORMATS = tuple(f for f in JudgeFormat.values() if f != MULTITASK)  # the formats a judgement is written in
SCORE_RANGE = (0.0, 10.0)

_J1_PAIRWISE = (
    "You are an impartial judge. Compare two responses to the user's question and decide "
    "which one is better. Judge correctness first, then helpfulness, relevance and detail. "
    "Do not let the order of the responses, their length or the assistants' names influence you.\n"
    "First think it through inside <think> and </think>: work out your own reference answer "
    "where the question has one, and list the criteria you apply.\n"
    "{ending}\n\n"
    "[User Question]\n{question}\n\n"
    "[The Start of Assistant A's Answer]\n{a}\n[The End of Assistant A's Answer]\n\n"
    "[The Start of Assistant B's Answer]\n{b}\n[The End of Assistant B's Answer]"
)
_J1_POINTWISE = (
    "You are an impartial judge. Rate the response to the user's question on a scale from 0 "
    "(useless or wrong) to 10 (correct and excellent). Judge correctness first, then "
    "helpfulness, relevance and detail.\n"
    "First think it through inside <think> and </think>: work out your own reference answer "
    "where the question has one, and list the criteria you apply.\n"
    "Then give the score, with one decimal at most, as <score> s </score>.\n\n"
    "[User Question]\n{question}\n\n"
    "[The Start of the Assistant's Answer]\n{a}\n[The End of the Assistant's Answer]"
)
_ENDINGS = {
    "pairwise": "Then give your verdict as <answer> [[A]] </answer> if Assistant A is better, "
    "or <answer> [[B]] </answer> if Assistant B is better.",
    "pairwise_scores": "Then score each response from 0 to 10 (one decimal at most) as "
    "<score_A> s </score_A> <score_B> s </score_B>; the better response gets the higher score.",
}
_RM_R1 = (
    "Please act as an impartial judge and evaluate two chatbot responses to the client's question.\n"
    "1. Classify the task inside <type>...</type> as Chat or Reasoning.\n"
    "2. Chat: write the rubric items that matter for this question, with a justification for each, "
    "inside <rubric>...</rubric>. Reasoning: solve the question yourself first inside "
    "<solution>...</solution>.\n"
    "3. Evaluate both responses against the rubric or your solution inside <eval>...</eval>, "
    "quoting them where it helps.\n"
    "4. End with <answer>[[A]]</answer> if Chatbot A is better or <answer>[[B]]</answer> if Chatbot B is.\n\n"
    "[Client Question]\n{question}\n\n"
    "[The Start of Chatbot A's Response]\n{a}\n[The End of Chatbot A's Response]\n\n"
    "[The Start of Chatbot B's Response]\n{b}\n[The End of Chatbot B's Response]"
)


def check_choice(judge: str, style: str, keys: tuple[str, str] = ("recipe.judge", "recipe.prompt")) -> None:
    """One-line errors for an unknown format or style, or a style that lacks the format;
    `keys` name the two settings as the user wrote them (config keys or command options)."""
    valid = (*FORMATS, MULTITASK) if keys[0].startswith("recipe.") else FORMATS
    if judge not in valid:
        raise ConfigError(f"{keys[0]}={judge!r}; valid: {', '.join(valid)}")
    if style not in PromptStyle.values():
        raise ConfigError(f"{keys[1]}={style!r}; valid: {PromptStyle.valid()}")
    if style == "rm_r1" and judge != "pairwise":
        raise ConfigError(
            f"{keys[1]}=rm_r1 (chain of rubrics) ends in a verdict: it needs {keys[0]}=pairwise, not {judge}"
        )


def pairwise_prompt(question: str, a: str, b: str, judge: str = "pairwise", style: str = "j1") -> str:
    """The user message asking to compare response `a` (shown first) with `b`."""
    check_choice(judge, style)
    if judge == "pointwise":
        raise UserError("recipe.judge=pointwise scores one response at a time; use pointwise_prompt")
    if style == "compact":
        return f"{question}\nA: {a}\nB: {b}\n" + ("Better?" if judge == "pairwise" else "Scores?")
    if style == "rm_r1":
        return _RM_R1.format(question=question, a=a, b=b)
    return _J1_PAIRWISE.format(question=question, a=a, b=b, ending=_ENDINGS[judge])


def pointwise_prompt(question: str, response: str, style: str = "j1") -> str:
    """The user message asking for a 0-10 score of one response."""
    check_choice("pointwise", style)
    if style == "compact":
        return f"{question}\nR: {response}\nScore?"
    return _J1_POINTWISE.format(question=question, a=response)

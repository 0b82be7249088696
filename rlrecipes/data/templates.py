"""Prompt templates: how a problem becomes the text the policy continues.

Prompts are rendered to plain strings here (not left to TRL's chat handling) so that
training and evaluation see byte-identical prompts for the same template.
"""

from __future__ import annotations

from typing import Any

from rlrecipes.choice import Choice
from rlrecipes.errors import UserError

QWEN_MATH_COT_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
DAPO_INSTRUCTION = (
    "Solve the following math problem step by step. The last line of your response should be "
    "of the form Answer: $Answer (without quotes) where $Answer is the answer to the problem."
    '\n\n{problem}\n\nRemember to put your answer on its own line after "Answer:".'
)
# Search-R1's instruction for base models, verbatim (typo "your want" and all):
# scripts/data_process/qa_search_train_merge.py:32-36 in PeterGriffinJin/Search-R1 @ a14dc3a.
SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
    "get new information. After reasoning, if you find you lack some knowledge, you can call a search engine "
    "by <search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)


class Template(Choice):  # `data.template`, `protocol.template`
    plain = "plain"
    chat = "chat"
    qwen_math_cot = "qwen_math_cot"
    dapo = "dapo"
    search_r1 = "search_r1"


def render_prompt(problem: str, template: str, tokenizer: Any = None, system_prompt: str | None = None) -> str:
    """Render `problem` with `template` (plain | chat | qwen_math_cot | dapo | search_r1)."""
    if template == "plain":
        return problem if system_prompt is None else f"{system_prompt}\n\n{problem}"
    if template == "chat":
        return _chat(problem, tokenizer, system_prompt)
    if template == "qwen_math_cot":
        return _chat(problem, tokenizer, system_prompt or QWEN_MATH_COT_SYSTEM)
    if template == "dapo":
        return _chat(DAPO_INSTRUCTION.format(problem=problem), tokenizer, system_prompt)
    if template == "search_r1":  # under the chat template, as verl's RLHFDataset renders it (rl_dataset.py:128-129)
        return _chat(SEARCH_R1_INSTRUCTION.format(question=search_r1_question(problem)), tokenizer, system_prompt)
    raise UserError(f"data.template={template!r} is unknown; valid: {Template.valid()}")


def search_r1_question(question: str) -> str:
    """The question as Search-R1's data scripts store it: stripped, ending in '?'
    (qa_search_train_merge.py:65-67)."""
    question = question.strip()
    return question if question.endswith("?") else question + "?"


def _chat(user: str, tokenizer: Any, system_prompt: str | None) -> str:
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise UserError("this template needs a tokenizer with a chat template; use data.template=plain")
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": user})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

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


class Template(Choice):  # `data.template`, `protocol.template`
    plain = "plain"
    chat = "chat"
    qwen_math_cot = "qwen_math_cot"
    dapo = "dapo"


def render_prompt(problem: str, template: str, tokenizer: Any = None, system_prompt: str | None = None) -> str:
    """Render `problem` with `template` (plain | chat | qwen_math_cot | dapo)."""
    if template == "plain":
        return problem if system_prompt is None else f"{system_prompt}\n\n{problem}"
    if template == "chat":
        return _chat(problem, tokenizer, system_prompt)
    if template == "qwen_math_cot":
        return _chat(problem, tokenizer, system_prompt or QWEN_MATH_COT_SYSTEM)
    if template == "dapo":
        return _chat(DAPO_INSTRUCTION.format(problem=problem), tokenizer, system_prompt)
    raise UserError(f"data.template={template!r} is unknown; valid: {Template.valid()}")


def _chat(user: str, tokenizer: Any, system_prompt: str | None) -> str:
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise UserError("this template needs a tokenizer with a chat template; use data.template=plain")
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    messages.append({"role": "user", "content": user})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

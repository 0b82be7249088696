"""`calculator`: integer and decimal arithmetic, evaluated from the syntax tree, never executed.

The tool-integrated-reasoning default (ToRA, ReTool and SimpleTIR run code; this project
executes no model text outside the opt-in sandbox, tools/python.py). Only number literals,
`+ - * / // % **`, unary signs and parentheses are accepted; operands and exponents are
capped so that no expression can take unbounded time or memory (`9**9**9` is refused, not
computed), by the shared evaluator (rlrecipes/arithmetic.py). Anything else is a
`ToolFailure` whose message the model reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from rlrecipes.arithmetic import NotEvaluated, Numbers, evaluate_arithmetic
from rlrecipes.tools import ToolFailure, ToolSpec, register_tool


@dataclass
class CalculatorOptions:
    open: str = "<calculator>"
    close: str = "</calculator>"
    wrap: str = "<result>{}</result>"
    max_digits: int = 100  # of any operand or intermediate result
    max_exponent: int = 64
    max_length: int = 200  # characters of the expression


def evaluate(expression: str, max_digits: int = 100, max_exponent: int = 64, max_length: int = 200) -> str:
    """The value of `expression` as text (integers exactly; a float result as Python prints it)."""
    text = expression.strip()
    if not text:
        raise ToolFailure("empty expression")
    try:
        value = evaluate_arithmetic(
            text, numbers=Numbers.python, max_digits=max_digits, max_exponent=max_exponent, max_length=max_length
        )
    except NotEvaluated as exc:
        raise ToolFailure(str(exc)) from None
    return str(value)


@register_tool("calculator", CalculatorOptions)
def calculator_tool(options: CalculatorOptions) -> ToolSpec:
    def run(query: str) -> str:
        return evaluate(query, options.max_digits, options.max_exponent, options.max_length)

    return ToolSpec("calculator", options.open, options.close, options.wrap, run)

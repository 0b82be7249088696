"""`calculator`: integer and decimal arithmetic, evaluated from the syntax tree, never executed.

The tool-integrated-reasoning default (ToRA, ReTool and SimpleTIR run code; this project
executes no model text outside the opt-in sandbox, tools/python.py). Only number literals,
`+ - * / // % **`, unary signs and parentheses are accepted; operands and exponents are
capped so that no expression can take unbounded time or memory (`9**9**9` is refused, not
computed). Anything else is a `ToolFailure` whose message the model reads.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass
from typing import Any

from rlrecipes.tools import ToolFailure, ToolSpec, register_tool

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


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
    if len(text) > max_length:
        raise ToolFailure(f"expression longer than {max_length} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ToolFailure(f"cannot parse {text!r}") from None
    value = _eval(tree.body, max_digits, max_exponent)
    return str(value)


def _eval(node: ast.AST, max_digits: int, max_exponent: int) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _capped(node.value, max_digits)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, max_digits, max_exponent))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _eval(node.left, max_digits, max_exponent)
        right = _eval(node.right, max_digits, max_exponent)
        if isinstance(node.op, ast.Pow) and abs(right) > max_exponent:
            raise ToolFailure(f"exponent {right} is larger than {max_exponent}")
        if isinstance(node.op, ast.Pow) and abs(left) > 1 and len(str(int(abs(left)))) * abs(right) > max_digits + 1:
            raise ToolFailure(f"result would have more than {max_digits} digits")
        try:
            return _capped(_BINARY[type(node.op)](left, right), max_digits)
        except ZeroDivisionError:
            raise ToolFailure("division by zero") from None
        except OverflowError:
            raise ToolFailure("result too large") from None
    raise ToolFailure(f"unsupported: {ast.unparse(node)!r} (numbers, + - * / // % ** and parentheses only)")


def _capped(value: Any, max_digits: int) -> Any:
    if isinstance(value, complex):  # (-8) ** 0.5
        raise ToolFailure("complex result")
    if isinstance(value, int) and len(str(abs(value))) > max_digits:
        raise ToolFailure(f"result has more than {max_digits} digits")
    return value


@register_tool("calculator", CalculatorOptions)
def calculator_tool(options: CalculatorOptions) -> ToolSpec:
    def run(query: str) -> str:
        return evaluate(query, options.max_digits, options.max_exponent, options.max_length)

    return ToolSpec("calculator", options.open, options.close, options.wrap, run)

"""Arithmetic on text a model or a data file wrote: parsed into Python's syntax tree and
evaluated node by node, never executed (no `eval`, no `exec`).

One evaluator for the three places that need one, each with its own settings:
- the synthetic tasks' answers and Countdown checks (`rlrecipes.data.synthetic.evaluate`):
  integers, `+ - *`, no unary signs, products up to 10**12;
- the `calculator` tool (`rlrecipes.tools.calculator`): Python's numbers, `+ - * / // % **`,
  operands, intermediate results and exponents capped so no expression takes unbounded
  time or memory (`9**9**9` is refused, not computed); its refusals are text the model reads;
- the Countdown reward (`rlrecipes.rewards.countdown`): every number a float, `+ - * /`, as
  the authors' reward computes its equations.

What a number is, and so what `/` means, is the `numbers` setting:
- `integer`: integer literals only; `/` only where it divides exactly, every value an int;
- `python`: int and float literals as Python computes them: integers exact, `/` a float;
- `float`: every literal turned into a float first, every value a float.
Anything else (a name, a call, an operator not allowed) raises `NotEvaluated`, whose message
says why.
"""

from __future__ import annotations

import ast
import operator
import warnings
from enum import Enum
from fractions import Fraction
from typing import Any, Callable, Sequence

_BINARY: dict[type, tuple[str, Callable[[Any, Any], Any]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
}
OPERATORS = tuple(symbol for symbol, _ in _BINARY.values())  # + - * / // % **
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


class Numbers(Enum):
    integer = "integer"
    python = "python"
    float = "float"


class NotEvaluated(ValueError):
    """An expression the evaluator refuses or cannot compute; the message says why."""


def evaluate_arithmetic(
    text: str,
    *,
    numbers: Numbers = Numbers.python,
    operators: Sequence[str] = OPERATORS,
    unary: bool = True,
    max_digits: int | None = 100,
    max_exponent: int | None = 64,
    max_length: int | None = 200,
    max_product: int | None = None,
) -> int | float:
    """The value of the expression `text` (parsed as it stands: a caller strips it if it
    wants to). `max_digits` caps every integer literal and integer result (a power is refused
    before it is computed when its result would be longer), `max_exponent` the size of an
    exponent, `max_length` the characters of `text`, `max_product` the size of a product
    (the synthetic tasks' cap, older than the others); None: no cap."""
    unknown = sorted(set(operators) - set(OPERATORS))
    if unknown:
        raise ValueError(f"operators {unknown}; valid: {' '.join(OPERATORS)}")
    if max_length is not None and len(text) > max_length:
        raise NotEvaluated(f"expression longer than {max_length} characters")
    try:
        # the parser warns on some model text ("2x" is an "invalid decimal literal"): that
        # text is refused below or parses; either way the warning is noise on the run's stderr
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise NotEvaluated(f"cannot parse {text!r}") from None
    return _Evaluator(numbers, tuple(operators), unary, max_digits, max_exponent, max_product).value(tree.body)


class _Evaluator:
    def __init__(
        self,
        numbers: Numbers,
        operators: tuple[str, ...],
        unary: bool,
        max_digits: int | None,
        max_exponent: int | None,
        max_product: int | None,
    ):
        self.numbers, self.operators, self.unary = Numbers(numbers), operators, unary
        self.max_digits, self.max_exponent, self.max_product = max_digits, max_exponent, max_product
        allowed = " ".join(op for op in OPERATORS if op in operators)
        kind = "integers" if self.numbers is Numbers.integer else "numbers"
        self.allowed = f"{kind}, {allowed} and parentheses only"

    def value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and type(node.value) in self._literal_types():
            return self._capped(self._number(node.value))
        if self.unary and isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY and _BINARY[type(node.op)][0] in self.operators:
            left, right = self.value(node.left), self.value(node.right)
            symbol, apply = _BINARY[type(node.op)]
            if symbol == "**":
                self._check_power(left, right)
            if symbol == "/" and self.numbers is Numbers.integer:
                apply = _whole_quotient
            try:
                result = apply(left, right)
            except ZeroDivisionError:
                raise NotEvaluated("division by zero") from None
            except OverflowError:
                raise NotEvaluated("result too large") from None
            if self.numbers is Numbers.integer and not isinstance(result, int):  # 2 ** -1
                raise NotEvaluated(f"{ast.unparse(node)} is not a whole number")
            if symbol == "*" and self.max_product is not None and abs(result) > self.max_product:
                raise NotEvaluated(f"product larger than {self.max_product}")
            return self._capped(result)
        raise NotEvaluated(f"unsupported: {ast.unparse(node)!r} ({self.allowed})")

    def _literal_types(self) -> tuple[type, ...]:
        return (int,) if self.numbers is Numbers.integer else (int, float)  # never bool or complex

    def _number(self, literal: int | float) -> int | float:
        if self.numbers is not Numbers.float:
            return literal
        try:
            return float(literal)
        except OverflowError:  # an integer literal past the largest float
            raise NotEvaluated("result too large") from None

    def _check_power(self, base: Any, exponent: Any) -> None:
        if self.max_exponent is not None and abs(exponent) > self.max_exponent:
            raise NotEvaluated(f"exponent {exponent} is larger than {self.max_exponent}")
        digits = self.max_digits
        if digits is not None and abs(base) > 1 and len(str(int(abs(base)))) * abs(exponent) > digits + 1:
            raise NotEvaluated(f"result would have more than {digits} digits")

    def _capped(self, value: Any) -> Any:
        if isinstance(value, complex):  # (-8) ** 0.5
            raise NotEvaluated("complex result")
        if self.max_digits is not None and isinstance(value, int) and len(str(abs(value))) > self.max_digits:
            raise NotEvaluated(f"result has more than {self.max_digits} digits")
        return value


def _whole_quotient(left: int, right: int) -> int:
    quotient = Fraction(left, right)  # ZeroDivisionError for right == 0, as the other modes
    if quotient.denominator != 1:
        raise NotEvaluated(f"{left}/{right} is not a whole number")
    return int(quotient)

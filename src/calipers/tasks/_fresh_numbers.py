"""Fresh numbers for math word problems, in the spirit of GSM-Symbolic: the same problem with
other numbers and the answer recomputed from the worked solution.

GSM8K solutions annotate every calculation: ``48/2 = <<48/2=24>>24``. A problem can be
re-numbered when every number in those calculations is either a number of the question,
the result of an earlier calculation, or a small constant such as the 2 of "half". The
question's numbers get new values (seeded, the same number of digits, never 0 or 1 where
they were larger); the calculations are re-evaluated in order; the new answer is the last
result. A problem is kept only if re-evaluating the original numbers reproduces every
annotated result (so the substitution is understood) and every new result is a
non-negative integer where the original was, and the answer changes (a memorised answer
must no longer be right). Otherwise it is left out, and counted. New numbers keep their
digit count but not their plausibility: "63 weeks a year" can happen.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections.abc import Callable

__all__ = ["renumber"]

_CALC = re.compile(r"<<([^=<>]+)=([^<>]+)>>")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.]*\d)")
_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _eval(expr: str, values: dict[str, float]) -> float | None:
    """A + - * / expression whose numbers are looked up in ``values`` (None: not understood)."""
    try:
        tree = ast.parse(expr.replace("x", "*").strip(), mode="eval")
    except SyntaxError:
        return None

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            key = _key(float(node.value))
            return values.get(key, float(node.value))
        raise ValueError("unsupported")

    try:
        return walk(tree)
    except (ValueError, ZeroDivisionError):
        return None


def _key(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


# Numbers a solution may use as constants (half, dozen, minutes, percent...): a question
# number equal to one of them stays, so a constant is never renumbered by mistake.
_CONSTANTS = frozenset({10, 12, 24, 30, 52, 60, 100, 365, 1000})


def _fresh(value: str, rng: random.Random) -> str:
    n = int(value)
    if n < 10 or n in _CONSTANTS:  # single digits double as "half", "twice", "three"...
        return value
    lo, hi = 10 ** (len(value) - 1), 10 ** len(value) - 1
    for _ in range(20):
        m = rng.randint(lo, hi)
        if m != n:
            return str(m)
    return value


def renumber(
    question: str,
    solution: str,
    answer: str,
    rng: random.Random,
) -> tuple[str, str] | None:
    """``(new question, new answer)``, or None when the problem cannot be re-numbered
    safely (see the module docstring)."""
    question = re.sub(r"(?<=\d),(?=\d{3}\b)", "", question)  # 80,000 -> 80000
    given = [m.group(0) for m in _NUMBER.finditer(question)]
    if not given or any("." in g for g in given) or len(set(given)) != len(given):
        return None  # decimals, or one number used twice: ambiguous to substitute
    calcs = _CALC.findall(solution.replace(",", ""))
    if not calcs:
        return None
    new = {g: _fresh(g, rng) for g in given}
    if all(new[g] == g for g in given):
        return None  # nothing to renumber
    if len(set(new.values())) != len(new):
        return None  # two numbers would read the same: the question would be ambiguous
    old_vals = {g: float(g) for g in given}
    new_vals = {g: float(new[g]) for g in given}
    result: float | None = None
    for expr, shown in calcs:
        before, after = _eval(expr, old_vals), _eval(expr, new_vals)
        try:
            target = float(shown)
        except ValueError:
            return None
        if before is None or after is None or abs(before - target) > 1e-6:
            return None  # not understood: the original does not re-evaluate to its result
        if target.is_integer() and not (after >= 0 and abs(after - round(after)) < 1e-9):
            return None
        old_vals[_key(target)] = target
        new_vals[_key(target)] = after
        result = after
    if (
        result is None
        or abs(float(answer.replace(",", "")) - old_vals[_key(float(calcs[-1][1]))]) > 1e-6
    ):
        return None  # the last calculation is not the answer
    text = _NUMBER.sub(lambda m: new.get(m.group(0), m.group(0)), question)  # one pass
    fresh = _key(round(result, 6))
    if fresh == _key(float(answer.replace(",", ""))):
        return None  # the same answer: a memorised answer would still be right
    return text, fresh

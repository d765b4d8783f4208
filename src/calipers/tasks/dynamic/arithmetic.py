"""Multi-step integer arithmetic: random expressions with 2-4 operations (``+ - * /``) and the
parentheses their structure needs. Every division is exact, every intermediate value stays
within +-9999, and the answer is the expression's value under the usual precedence rules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from calipers.scorers import build_scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.tasks._task import Task
from calipers.tasks.dynamic._seeding import fewshot_loader, loader
from calipers.types import GenerateParams, Sample

__all__ = ["arithmetic_task", "make_arithmetic", "make_expression"]

NAME = "dyn_arithmetic"
LIMIT = 9999
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


@dataclass(frozen=True)
class _Node:
    value: int
    text: str
    op: str | None = None  # None for a number


def _wrap(node: _Node, parent: str, right: bool) -> str:
    """The child's text, parenthesized when precedence or (for - and /) order demands it."""
    if node.op is None:
        return node.text
    lower = _PREC[node.op] < _PREC[parent]
    same_but_order_matters = (
        right and _PREC[node.op] == _PREC[parent] and (parent in "-/" or node.op != parent)
    )
    return f"({node.text})" if lower or same_but_order_matters else node.text


def _combine(r: random.Random, left: _Node, right: _Node) -> _Node:
    """``left op right`` for a random op that keeps the value an integer within LIMIT (one of
    ``+`` and ``-`` always does, as both operands are within it)."""
    ops = ["+", "-", "*", "/"]
    r.shuffle(ops)
    for op in ops:
        if op == "+":
            value = left.value + right.value
        elif op == "-":
            value = left.value - right.value
        elif op == "*":
            value = left.value * right.value
        elif right.value in (0, 1, -1) or left.value % right.value:
            continue  # only exact, non-trivial division
        else:
            value = left.value // right.value
        if abs(value) <= LIMIT:
            text = f"{_wrap(left, op, False)} {op} {_wrap(right, op, True)}"
            return _Node(value, text, op)
    raise AssertionError("unreachable: + or - stays within LIMIT")


def _number(r: random.Random) -> _Node:
    v = r.randint(2, 30) if r.random() < 0.8 else r.randint(31, 99)
    return _Node(v, str(v))


def _tree(r: random.Random, ops: int) -> _Node:
    if ops == 0:
        return _number(r)
    left_ops = r.randint(0, ops - 1)
    left, right = _tree(r, left_ops), _tree(r, ops - 1 - left_ops)
    if r.random() < 0.5 and right.op is None:
        # Give division a chance: replace the right number by a divisor of the left value.
        divisors = [d for d in range(2, 13) if left.value % d == 0 and left.value != d]
        if divisors:
            d = r.choice(divisors)
            return _Node(left.value // d, f"{_wrap(left, '/', False)} / {d}", "/")
    return _combine(r, left, right)


def make_expression(r: random.Random, ops: int) -> tuple[str, int]:
    """An expression with ``ops`` operations (its text, e.g. ``"(12 + 7) * 3 - 48 / 6"``)
    and its value."""
    node = _tree(r, ops)
    return node.text, node.value


def make_arithmetic(rng: random.Random, sample_id: str) -> Sample:
    """One expression; category ``"<k>_ops"``."""
    ops = rng.randint(2, 4)
    text, value = make_expression(rng, ops)
    return Sample(
        id=sample_id,
        input=text,
        target=str(value),
        category=f"{ops}_ops",
        metadata={"ops": ops, "has_division": "/" in text},
    )


def arithmetic_task() -> Task:
    default_n = 50
    return Task(
        name=NAME,
        version="1",
        description="Fresh integer expressions with 2-4 operations and parentheses; numeric "
        "answer after '####'.",
        kind="generate",
        load=loader(NAME, make_arithmetic, default_n),
        fewshot=fewshot_loader(NAME, make_arithmetic, default_n),
        scorers=(build_scorer("numeric_match"),),
        prompt=PromptTemplate(
            instruction="Compute the value of each expression. Division is exact. End your "
            "answer with '#### <number>'.",
            template="Question: What is {input}?\nAnswer:",
            answer=" #### {target}",
        ),
        default_few_shot=3,
        few_shot_sampling="fixed",
        params=GenerateParams(max_tokens=48, temperature=0.0, stop=("\nQuestion:",)),
        default_n=default_n,
        dynamic=True,
        source="calipers (generated)",
        tags=("dynamic", "math"),
    )

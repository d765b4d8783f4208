"""Independent answer checks for the dynamic tasks: they read the question text the model
sees and recompute the answer without any of the generators' code (no datetime for dates:
a Julian day number calculation instead)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from fractions import Fraction

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
DAYS_FROM_MONDAY = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


# ---- arithmetic -------------------------------------------------------------------------


def eval_expression(text: str) -> tuple[Fraction, int]:
    """Value and operation count of ``text``; asserts every division is exact."""
    ops = 0

    def ev(node: ast.expr) -> Fraction:
        nonlocal ops
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return Fraction(node.value)
        assert isinstance(node, ast.BinOp), ast.dump(node)
        ops += 1
        a, b = ev(node.left), ev(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        assert isinstance(node.op, ast.Div), ast.dump(node)
        assert b != 0 and (a / b).denominator == 1, f"inexact division in {text}"
        return a / b

    tree = ast.parse(text, mode="eval")
    return ev(tree.body), ops


# ---- dates (proleptic Gregorian via Julian day numbers) --------------------------------


def jdn(y: int, m: int, d: int) -> int:
    a = (14 - m) // 12
    yy, mm = y + 4800 - a, m + 12 * a - 3
    return d + (153 * mm + 2) // 5 + 365 * yy + yy // 4 - yy // 100 + yy // 400 - 32045


def from_jdn(j: int) -> tuple[int, int, int]:
    a = j + 32044
    b = (4 * a + 3) // 146097
    c = a - 146097 * b // 4
    d = (4 * c + 3) // 1461
    e = c - 1461 * d // 4
    m = (5 * e + 2) // 153
    return 100 * b + d - 4800 + m // 10, m + 3 - 12 * (m // 10), e - (153 * m + 2) // 5 + 1


def weekday(j: int) -> str:
    return DAYS_FROM_MONDAY[j % 7]  # JDN 0 was a Monday


_WEEKDAY_Q = re.compile(
    r"What day of the week is (\d+) days (after|before) (\w+), (\w+) (\d+), (\d{4})\?"
)
_DATE_Q = re.compile(r"What is the date (\d+) days (after|before) (\w+) (\d+), (\d{4})\?")


def date_answer(question: str) -> tuple[str, str]:
    """(weekday name, "Month D, YYYY") of the day a date question asks about; checks the
    weekday the question states for its start date."""
    stated: str | None = None
    if m := _WEEKDAY_Q.search(question):
        n, way, stated, month, day, year = m.groups()
    else:
        m = _DATE_Q.search(question)
        assert m, question
        n, way, month, day, year = m.groups()
    start = jdn(int(year), MONTHS.index(month) + 1, int(day))
    if stated is not None:
        assert weekday(start) == stated, f"wrong start weekday in {question}"
    j = start + (int(n) if way == "after" else -int(n))
    y, mo, d = from_jdn(j)
    return weekday(j), f"{MONTHS[mo - 1]} {d}, {y}"


def iso(long: str) -> str:
    m = re.fullmatch(r"(\w+) (\d+), (\d{4})", long)
    assert m, long
    month, day, year = m.groups()
    return f"{int(year):04d}-{MONTHS.index(month) + 1:02d}-{int(day):02d}"


# ---- word problems: one reader per template ---------------------------------------------


def _ints(pattern: str, text: str) -> list[int]:
    m = re.search(pattern, text)
    assert m, f"{pattern!r} not in {text!r}"
    return [int(g) for g in m.groups()]


def _whole(x: Fraction) -> int:
    assert x.denominator == 1, x
    return int(x)


_FRACTION_WORDS = {
    "Half": Fraction(1, 2),
    "One third": Fraction(1, 3),
    "One quarter": Fraction(1, 4),
    "One fifth": Fraction(1, 5),
    "Two thirds": Fraction(2, 3),
    "Three quarters": Fraction(3, 4),
}


def _shopping(q: str) -> int:
    a, p, b, c = _ints(r"buys (\d+) [a-z]+ for \$(\d+) each and (\d+) [a-z]+ for \$(\d+) each", q)
    return a * p + b * c


def _sharing(q: str) -> int:
    (total,) = _ints(r"^\w+ has (\d+) [a-z]+\.", q)
    (k,) = _ints(r"equally among (\d+) friends and keeps none", q)
    return _whole(Fraction(total, k))


def _savings(q: str) -> int:
    s, w = _ints(r"saves \$(\d+) every week for (\d+) weeks\.", q)
    (x,) = _ints(r"spends \$(\d+) on a", q)
    return s * w - x


def _ages(q: str) -> int:
    m = re.search(r"^(\w+) is (\d+) years old\.", q)
    m2 = re.search(r"(\w+) is (\d+) years older than (\w+)\.", q)
    m3 = re.search(r"How old will (\w+) be in (\d+) years\?$", q)
    assert m and m2 and m3, q
    assert m2.group(3) == m.group(1) and m3.group(1) == m2.group(1)
    return int(m.group(2)) + int(m2.group(2)) + int(m3.group(2))


def _production(q: str) -> int:
    (rate,) = _ints(r"makes (\d+) [a-z]+ per hour\.", q)
    (h,) = _ints(r"The machine runs for (\d+) hours each day\.", q)
    (d,) = _ints(r"in (\d+) days\?$", q)
    return rate * h * d


def _discount(q: str) -> int:
    (p,) = _ints(r"costs \$(\d+)\.", q)
    (pct,) = _ints(r"at (\d+)% off\.", q)
    return _whole(p * Fraction(100 - pct, 100))


def _changes(q: str) -> int:
    (a,) = _ints(r"^\w+ has (\d+) [a-z]+\.", q)
    (b,) = _ints(r"gives (\d+) of them to", q)
    (c,) = _ints(r"buys (\d+) more", q)
    return a - b + c


def _packs(q: str) -> int:
    (p,) = _ints(r"buys (\d+) packs of", q)
    (k,) = _ints(r"Each pack holds (\d+)", q)
    (bad,) = _ints(r"(\d+) of the [a-z]+ are broken", q)
    return p * k - bad


def _travel(q: str) -> int:
    legs = re.findall(r"at (\d+) kilometers per hour for (\d+) hours", q)
    assert len(legs) == 2, q
    return sum(int(v) * int(t) for v, t in legs)


def _fraction(q: str) -> int:
    (total,) = _ints(r"There are (\d+) students", q)
    m = re.search(r"(" + "|".join(_FRACTION_WORDS) + r") of them play soccer", q)
    assert m, q
    return _whole(total * (1 - _FRACTION_WORDS[m.group(1)]))


def _recipe(q: str) -> int:
    b, f = _ints(r"recipe for (\d+) muffins uses (\d+) cups of flour", q)
    (want,) = _ints(r"need for (\d+) muffins\?$", q)
    return _whole(f * Fraction(want, b))


WORD_PROBLEM_SOLVERS: dict[str, Callable[[str], int]] = {
    "shopping": _shopping,
    "sharing": _sharing,
    "savings": _savings,
    "ages": _ages,
    "production": _production,
    "discount": _discount,
    "changes": _changes,
    "packs": _packs,
    "travel": _travel,
    "fraction": _fraction,
    "recipe": _recipe,
}

DISTRACTOR_MARKERS = (
    "cousin lives",
    "degrees outside",
    "has lived in the town",
    "bicycle has",
    "building next door",
    "favorite number",
)

"""The arithmetic of a worked answer, recomputed: every ``a op b = c`` step of a reply.

A step is an equation on one line whose sides are arithmetic expressions, at least one of them
with an operator: ``17 * 3 = 51``, ``$1,200 / 4 = $300``, ``2 × 3.5 = 7``, ``12 x 4 = 48``,
``(3 + 4) * 2 = 14``, ``-5 + 3 = -2``, ``50 * 20% = 10``, GSM8K's ``<<48/2=24>>``. Numbers may
carry ``$``, thousands commas, decimals and a ``%``; operators are ``+ - * / × x ÷ ·`` (``x``
only between two numbers) and LaTeX's ``\\times``, ``\\cdot``, ``\\div``. The left side is
recomputed exactly (fractions) and compared with the right side as written: a right side with
fewer decimals than the exact value passes when it is the value rounded or cut to the digits
shown (``10 / 3 = 3.33``, ``7 / 2 = 3``), never otherwise (``100 / 3 = 34`` is wrong).

What is skipped rather than guessed: an equation whose side runs into a word (``2x + 3 = 9``,
``5 apples + 3 = 8``), a ``%`` next to ``+``/``-`` (``100 + 20% = 120`` is shorthand, not
arithmetic), unbalanced parentheses. A chain ``3 + 4 = 7 + 5 = 12`` is read as a running total
(each link's value starts the next expression) as people write it. A leading ``- `` followed
by a space is a bullet, not a minus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from fractions import Fraction

__all__ = ["Step", "check_steps", "format_value"]

_TOKEN = re.compile(
    r"""
    (?P<num>\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?|\$?\.\d+%?)
    |(?P<op>\\times|\\cdot|\\div|\*\*|[+\-*/×÷−–·])
    |(?P<x>(?<![A-Za-z])[xX](?![A-Za-z]))
    |(?P<lp>\()
    |(?P<rp>\))
    |(?P<eq>(?<![<>!=])=(?![=>]))
    |(?P<ws>[ \t]+)
    |(?P<other>\\[()\[\]]|[A-Za-z]+|.)
    """,
    re.X | re.S,
)
_ANNOTATION = re.compile(r"<<([^<>]*)>>")
_OPS = {
    "×": "*",
    "÷": "/",
    "−": "-",
    "–": "-",
    "·": "*",
    "\\times": "*",
    "\\cdot": "*",
    "\\div": "/",
}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num, op, lp, rp, eq
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Step:
    """One checked equation: its text as written, the line it is on (1-based), the left
    side's exact value and the right side's, and whether they agree."""

    text: str
    line: int
    value: Fraction
    stated: Fraction
    ok: bool

    def describe(self, index: int) -> str:
        """``"step 2: 17 * 3 = 41, should be 51"`` (or ``"... = 51, right"``)."""
        if self.ok:
            return f"step {index}: {self.text}, right"
        return f"step {index}: {self.text}, should be {format_value(self.value)}"


def format_value(v: Fraction) -> str:
    """A value as a reader would write it: ``51``, ``3.5``, ``10/3 (3.333…)``."""
    if v.denominator == 1:
        return str(v.numerator)
    d = Decimal(v.numerator) / Decimal(v.denominator)
    if _terminates(v.denominator):
        return format(d.normalize(), "f")
    return f"{v.numerator}/{v.denominator} ({d:.4g}…)"


def _terminates(q: int) -> bool:
    """A fraction with denominator ``q`` has a finite decimal expansion."""
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


def _number(text: str, *, face: bool = False) -> tuple[Fraction, int]:
    """``"$1,234.50"`` -> (Fraction(246900, 200), 2 decimals); ``"20%"`` -> 1/5 (20 at
    ``face`` value)."""
    s = text.replace("$", "").replace(",", "")
    pct = s.endswith("%") and not face
    s = s.rstrip("%")
    decimals = len(s.split(".")[1]) if "." in s else 0
    v = Fraction(Decimal(s))
    return (v / 100 if pct else v), decimals + (2 if pct else 0)


# -- tokens and runs ----------------------------------------------------------------


def _line_runs(line: str) -> list[tuple[list[_Tok], str, str]]:
    """Maximal runs of expression tokens on one line, each with the text before and after it
    (to tell a bullet, a dash or a word from a minus). ``x`` is an operator only between two
    operands; a line with any other lone ``x`` is algebra and has no runs."""
    raw = [(m.lastgroup or "other", m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(line)]
    toks: list[_Tok | None] = []
    for i, (kind, text, s, e) in enumerate(raw):
        if kind == "ws":
            continue
        if kind == "x":
            before = _neighbour(raw, i, -1)
            after = _neighbour(raw, i, 1)
            if not (before in ("num", "rp") and after in ("num", "lp")):
                return []  # an unknown: "3x + 4 = 28" is algebra, not arithmetic
            toks.append(_Tok("op", "*", s, e))
        elif kind == "op" and text == "**":
            toks.append(None)  # Markdown bold, not a power
        elif kind == "other":
            toks.append(None)
        else:
            toks.append(_Tok(kind, _OPS.get(text, text), s, e))
    runs: list[tuple[list[_Tok], str, str]] = []
    current: list[_Tok] = []
    for t in [*toks, None]:
        if t is not None:
            current.append(t)
            continue
        if current:
            runs.append((current, line[: current[0].start], line[current[-1].end :]))
        current = []
    return runs


def _neighbour(raw: list[tuple[str, str, int, int]], i: int, step: int) -> str | None:
    j = i + step
    while 0 <= j < len(raw) and raw[j][0] == "ws":
        j += step
    return raw[j][0] if 0 <= j < len(raw) else None


# -- one side: parse and evaluate -------------------------------------------------------------


class _Unparsable(Exception):
    pass


@dataclass
class _Side:
    toks: list[_Tok]

    @property
    def has_op(self) -> bool:
        # a binary operator: an op that follows an operand
        return any(
            t.kind == "op" and i > 0 and self.toks[i - 1].kind in ("num", "rp")
            for i, t in enumerate(self.toks)
        )

    @property
    def is_percent(self) -> bool:
        """A lone percentage ("= 94%"), read at face value next to a side without one."""
        return len(self.toks) == 1 and self.toks[0].text.endswith("%")

    def decimals(self) -> int:
        return max((_number(t.text)[1] for t in self.toks if t.kind == "num"), default=0)


def _trim(toks: list[_Tok]) -> list[_Tok]:
    """Drop unmatched parentheses at the ends ("(so 5 + 3 = 8)")."""
    toks = list(toks)
    while toks and toks[0].kind == "lp" and _count(toks, "lp") > _count(toks, "rp"):
        toks = toks[1:]
    while toks and toks[-1].kind == "rp" and _count(toks, "rp") > _count(toks, "lp"):
        toks = toks[:-1]
    return toks


def _count(toks: list[_Tok], kind: str) -> int:
    return sum(t.kind == kind for t in toks)


def _evaluate(toks: list[_Tok]) -> Fraction:
    """Recursive descent: + - over * / over unary minus, parentheses; exact fractions."""
    pos = 0

    def peek() -> _Tok | None:
        return toks[pos] if pos < len(toks) else None

    def take() -> _Tok:
        nonlocal pos
        t = peek()
        if t is None:
            raise _Unparsable
        pos += 1
        return t

    def atom() -> Fraction:
        t = take()
        if t.kind == "op" and t.text in "+-":
            v = atom()
            return -v if t.text == "-" else v
        if t.kind == "num":
            return _number(t.text)[0]
        if t.kind == "lp":
            v = expr()
            if take().kind != "rp":
                raise _Unparsable
            return v
        raise _Unparsable

    def term() -> Fraction:
        v = atom()
        while (t := peek()) is not None and t.kind == "op" and t.text in "*/":
            take()
            rhs = atom()
            if t.text == "/":
                if rhs == 0:
                    raise _Unparsable
                v = v / rhs
            else:
                v = v * rhs
        return v

    def expr() -> Fraction:
        v = term()
        while (t := peek()) is not None and t.kind == "op" and t.text in "+-":
            take()
            v = v + term() if t.text == "+" else v - term()
        return v

    out = expr()
    if pos != len(toks):
        raise _Unparsable
    return out


# -- equations ----------------------------------------------------------------


def _sides(run: list[_Tok], before: str, after: str) -> list[_Side | None]:
    """The run split at ``=``; a side that cannot be read as arithmetic is None."""
    parts: list[list[_Tok]] = [[]]
    for t in run:
        if t.kind == "eq":
            parts.append([])
        else:
            parts[-1].append(t)
    out: list[_Side | None] = []
    for i, toks in enumerate(parts):
        last = i == len(parts) - 1
        out.append(_side(toks, before if i == 0 else " ", after if last else ""))
    return out


def _side(toks: list[_Tok], before: str, after: str) -> _Side | None:
    if before[-1:].isalnum() or before[-1:] in (":", ".", ",", "/", "_"):
        return None  # "1:00 * 60": the side starts inside a time, a word or a number
    if after[:1] == ":" and after[1:2].isdigit():
        return None  # "= 5:30"
    toks = _trim(toks)
    if toks and toks[0].kind == "op" and toks[0].text in "+-":
        prev = before.rstrip()[-1:]
        if prev and (prev.isalnum() or prev in ")%*/"):
            return None  # "3x +4 - 4 = 28": the side starts inside a longer expression
        if len(toks) > 1 and toks[1].start != toks[0].end:
            toks = toks[1:]  # "- 3 + 4 = 7": a bullet or a dash, not a minus
    if toks and toks[-1].kind == "op" and toks[-1].text == "-" and after[:1] in (" ", "\t"):
        toks = toks[:-1]  # "= 15 - that is all"
    if not toks or (toks[0].kind == "op" and toks[0].text not in "+-"):
        return None
    if not any(t.kind == "num" for t in toks) or toks[-1].kind == "op":
        return None
    has_pct = any(t.kind == "num" and t.text.endswith("%") for t in toks)
    if has_pct and any(t.kind == "op" and t.text in "+-" for t in toks[1:]):
        return None  # "100 + 20% = 120" is shorthand for a 20% increase
    return _Side(toks)


def _digits(v: Fraction) -> int | None:
    """Decimals of ``v`` written out (``3.25`` -> 2); None when it never ends (``10/3``)."""
    if not _terminates(v.denominator):
        return None
    k = 0
    while (v * 10**k).denominator != 1:
        k += 1
    return k


def _agrees(value: Fraction, stated: Fraction, shown: int, inputs: int) -> bool:
    """The stated value is the exact one, or, where the exact value has more decimals than
    the numbers it came from (``10 / 3``, ``2.5 * 2.5``), it rounded (half up) or cut to the
    ``shown`` decimals. ``1.5 * 3 = 4`` is wrong: 4.5 needs no more digits than its inputs."""
    if value == stated:
        return True
    digits = _digits(value)
    if digits is not None and digits <= inputs:
        return False
    exact = Decimal(value.numerator) / Decimal(value.denominator)
    q = Decimal(1).scaleb(-shown)
    return stated in (
        Fraction(exact.quantize(q, ROUND_HALF_UP)),
        Fraction(exact.quantize(q, ROUND_DOWN)),
    )


def _line_steps(line: str, line_no: int) -> list[Step]:
    steps: list[Step] = []
    for run, before, after in _line_runs(line):
        if not any(t.kind == "eq" for t in run):
            continue
        sides = _sides(run, before, after)
        values = [_value(s) for s in sides]
        for i in range(len(sides) - 1):
            left, right = sides[i], sides[i + 1]
            lv, rv = values[i], values[i + 1]
            if left is None or right is None or lv is None or rv is None:
                continue
            if not (left.has_op or right.has_op):
                continue
            ok = _link_ok(left, right, lv, rv)
            # a lone percentage may be meant as a number ("45 + 21 + 28 = 94%")
            if not ok and right.is_percent:
                ok = _link_ok(left, right, lv, _number(right.toks[0].text, face=True)[0])
            if not ok and right.has_op and _running_total(lv, right):
                ok = True
            text = line[left.toks[0].start : right.toks[-1].end].strip()
            steps.append(Step(text=text, line=line_no, value=lv, stated=rv, ok=ok))
    return steps


def _value(side: _Side | None) -> Fraction | None:
    if side is None:
        return None
    try:
        return _evaluate(side.toks)
    except (_Unparsable, ArithmeticError, ValueError):
        return None


def _link_ok(left: _Side, right: _Side, lv: Fraction, rv: Fraction) -> bool:
    return _agrees(lv, rv, right.decimals(), left.decimals()) or _agrees(
        rv, lv, left.decimals(), right.decimals()
    )


def _running_total(value: Fraction, right: _Side) -> bool:
    """``3 + 4 = 7 + 5 = 12``: the link's right side starts with the left side's value."""
    first = right.toks[0]
    return first.kind == "num" and _number(first.text)[0] == value


def check_steps(text: str) -> list[Step]:
    """Every ``a op b = c`` step of ``text``, in order, each recomputed (module docstring)."""
    text = text.replace("\\(", " ").replace("\\)", " ").replace("\\[", " ").replace("\\]", " ")
    out: list[Step] = []
    for no, line in enumerate(text.splitlines(), start=1):
        # GSM8K's calculator annotations, "48/2 = <<48/2=24>>24": the text is read without
        # them ("48/2 = 24") and each annotation on its own; a step both give counts once
        outer = _line_steps(_ANNOTATION.sub("", line), no)
        seen = {(st.value, st.stated) for st in outer}
        inner = [st for m in _ANNOTATION.finditer(line) for st in _line_steps(m.group(1), no)]
        out += outer + [st for st in inner if (st.value, st.stated) not in seen]
    return out

"""GSM8K-style numeric answer scoring: calipers' own reading, numeric equality.

- strict: the first ``#### <number>`` (the pattern of lm-eval's strict-match,
  ``#### (\\-?[0-9\\.\\,]+)``); ``#### $18`` is not strict.
- flexible: the strict number when there is one, else the last match of
  ``(-?[$0-9.,]{2,})|(-?[0-9]+)``, skipping matches that are not numbers (``...``, ``$,``).

Numbers are normalized (``$`` and thousands commas removed, a trailing ``.`` dropped) and
compared as :class:`~decimal.Decimal` within an absolute ``tolerance``: ``"$18.00"`` equals
``"18"``.

This is **not** lm-evaluation-harness' rule, and it gives other verdicts: lm-eval's
flexible-extract takes the reply's last number even after a ``#### N`` and compares strings
(``12.0`` is not ``12`` there). ``gsm8k_lmeval`` (``calipers.scorers._lmeval_gsm8k``) is
lm-eval's rule exactly; use it to compare with published lm-eval figures.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from calipers.errors import ConfigError, DataError
from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Sample, SampleOutput, Score

__all__ = [
    "extract_flexible",
    "extract_strict",
    "format_number",
    "numeric_match",
    "parse_number",
]

_STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
_FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")


def parse_number(text: str) -> Decimal | None:
    """``"$1,234."`` -> ``Decimal("1234")``; None when the text is not a number."""
    s = text.strip().replace("$", "").replace(",", "").rstrip(".")
    if not any(ch.isdigit() for ch in s):
        return None
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def format_number(d: Decimal) -> str:
    """Canonical text of a number: no exponent, no trailing zeros (``18.50`` -> ``18.5``)."""
    s = format(d, "f")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in {"-0", ""} else s


def extract_strict(text: str) -> Decimal | None:
    """The number after the first ``#### `` (None when absent or not a number)."""
    m = _STRICT.search(text)
    return parse_number(m.group(1)) if m else None


def extract_flexible(text: str) -> Decimal | None:
    """The strict number if present, else the last number-like match in the text."""
    strict = extract_strict(text)
    if strict is not None:
        return strict
    for m in reversed(list(_FLEXIBLE.finditer(text))):
        d = parse_number(m.group(0))
        if d is not None:
            return d
    return None


def _target_number(sample: Sample) -> Decimal:
    text = sample.target_text
    d = extract_strict(text) if "####" in text else parse_number(text)
    if d is None:
        d = extract_flexible(text)
    if d is None:
        raise DataError(
            f"Sample {sample.id!r} has no numeric target ({text!r}); numeric_match needs one."
        )
    return d


@scorer("numeric_match", metrics=("acc", "acc_strict"))
def numeric_match(*, tolerance: float = 1e-6) -> ScoreFn:
    """Numeric answer, compared as numbers: flexible (acc) and strict ``#### N`` (acc_strict).

    ``acc`` uses the ``####`` number, else the last number of the reply; ``acc_strict`` needs
    ``#### <number>``; both equal the target numerically (``12.0`` = ``12``). Not lm-eval's
    rule (``gsm8k_lmeval`` is). A reply without a number scores 0 (answer None). The target
    may be a bare number or a GSM8K solution ending in ``#### N``."""
    if not (isinstance(tolerance, int | float) and math.isfinite(tolerance) and tolerance >= 0):
        raise ConfigError(f"numeric_match tolerance must be a number >= 0, not {tolerance!r}.")
    tol = Decimal(repr(float(tolerance)))

    def same(a: Decimal | None, b: Decimal) -> bool:
        return a is not None and abs(a - b) <= tol

    async def score(sample: Sample, output: SampleOutput) -> Score:
        target = _target_number(sample)
        flexible = extract_flexible(output.text)
        strict = extract_strict(output.text)
        values = {"acc": float(same(flexible, target)), "acc_strict": float(same(strict, target))}
        return Score(
            values=values,
            answer=None if flexible is None else format_number(flexible),
            metadata={
                "strict": None if strict is None else format_number(strict),
                "target": format_number(target),
            },
        )

    return score

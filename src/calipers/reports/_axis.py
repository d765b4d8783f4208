"""Plot axes that cannot exaggerate: how the range of a forest or difference plot is chosen.

- Scores whose intervals all lie in [0, 1] get the full 0–100% axis, always: a 2-point gap
  looks like a 2-point gap, never like a cliff.
- Other scores get an axis that includes 0, unless every interval is far from 0 (zero would
  be more than :data:`FAR` data spans away, so over three quarters of the plot would be
  empty); then the axis covers the data with a margin and says that it does not start at 0.
- Differences get an axis symmetric around 0 that covers every interval, so better and worse
  look alike and the zero line sits in the middle.
- Counts get an axis from 0 in whole numbers: 20,833 against 20,834 requests is not a cliff.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from calipers.types import Estimate

__all__ = [
    "FAR",
    "Axis",
    "count_axis",
    "diff_axis",
    "ends",
    "nice_step",
    "score_axis",
    "unit_scale",
]

FAR = 3.0
"""A non-negative score axis leaves out 0 only when the lowest interval end exceeds FAR times
the data's span (and likewise below 0)."""

Unit = Literal["percent", "points", "raw"]


@dataclass(frozen=True, slots=True)
class Axis:
    """A linear axis from ``lo`` to ``hi`` with tick values; ``unit`` says how ticks read:
    ``percent`` (0.25 → 25%), ``points`` (a difference of proportions: 0.05 → +5) or ``raw``."""

    lo: float
    hi: float
    ticks: tuple[float, ...]
    unit: Unit
    note: str

    def label(self, v: float) -> str:
        if self.unit == "percent":
            return f"{_clean(100 * v):g}%"
        if self.unit == "points":
            x = _clean(100 * v)
            return "0" if x == 0 else f"{x:+g}".replace("-", "−")
        return f"{_clean(v):g}".replace("-", "−") if v < 0 else f"{_clean(v):g}"

    def frac(self, v: float) -> float:
        """Where ``v`` falls, 0 at ``lo`` and 1 at ``hi``."""
        return (v - self.lo) / (self.hi - self.lo)


def _clean(v: float) -> float:
    return round(v, 9) + 0.0  # + 0.0 turns -0.0 into 0.0


def ends(estimates: Iterable[Estimate]) -> list[float]:
    """Every finite point and interval end of the non-empty estimates."""
    out: list[float] = []
    for e in estimates:
        if not e.is_empty:
            out += [x for x in (e.low, e.value, e.high) if math.isfinite(x)]
    return out


def unit_scale(estimates: Iterable[Estimate]) -> bool:
    """Whether every interval lies in [0, 1] (no data counts as on the scale)."""
    return all(0.0 <= x <= 1.0 for x in ends(estimates))


def nice_step(span: float, target: int = 5) -> float:
    """A 1-2-2.5-5 step giving about ``target`` intervals over ``span``."""
    if not span > 0:
        return 1.0
    raw = span / target
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)


def _ticks(lo: float, hi: float, step: float) -> tuple[float, ...]:
    n = round((hi - lo) / step)
    return tuple(_clean(lo + i * step) for i in range(n + 1))


def _nice(lo: float, hi: float, target: int = 5) -> tuple[float, float, float]:
    step = nice_step(hi - lo, target)
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step, step


def score_axis(estimates: Sequence[Estimate]) -> Axis:
    """The axis for a forest plot of these estimates (see the module docstring)."""
    xs = ends(estimates)
    if all(0.0 <= x <= 1.0 for x in xs):
        return Axis(0.0, 1.0, (0.0, 0.25, 0.5, 0.75, 1.0), "percent", "full 0–100% axis")
    lo, hi = min(xs), max(xs)
    span = hi - lo
    if (lo > 0 and lo > FAR * span) or (hi < 0 and -hi > FAR * span):
        pad = 0.1 * span if span > 0 else 0.05 * abs(lo)
        a, b, step = _nice(lo - pad, hi + pad)
        start = "starts" if lo > 0 else "ends"
        return Axis(
            a,
            b,
            _ticks(a, b, step),
            "raw",
            f"axis {start} at {_clean(a if lo > 0 else b):g}, not 0: every value "
            f"is far from 0 (more than {FAR:g}× the data's span)",
        )
    a, b, step = _nice(min(lo, 0.0), max(hi, 0.0))
    if a == b:
        a, b, step = -1.0, 1.0, 0.5
    return Axis(a, b, _ticks(a, b, step), "raw", "axis includes 0")


def count_axis(estimates: Sequence[Estimate]) -> Axis:
    """An axis from 0 to above the largest count, with whole-number ticks."""
    hi = max(ends(estimates), default=1.0)
    step = max(1.0, nice_step(hi))
    top = math.ceil(hi / step - 1e-9) * step or step
    return Axis(0.0, top, _ticks(0.0, top, step), "raw", "counts, from 0")


def diff_axis(estimates: Sequence[Estimate], *, points: bool) -> Axis:
    """A symmetric axis around 0 covering every interval of these differences; ``points``
    labels proportions as percentage points."""
    xs = ends(estimates)
    m = max((abs(x) for x in xs), default=0.0)
    if m == 0:
        m = 0.05 if points else 1.0
    step = nice_step(2 * m, 4)
    top = math.ceil(m / step - 1e-9) * step
    return Axis(
        -top,
        top,
        _ticks(-top, top, step),
        "points" if points else "raw",
        "symmetric around 0, covering every interval",
    )

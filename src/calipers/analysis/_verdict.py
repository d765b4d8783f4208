"""The verdict of a comparison in words a decision can be made on."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["verdict"]


def _scale(row: Any) -> tuple[float, str]:
    """Scores in [0, 1] are talked about in percentage points; others in their own units."""
    a, b = row.score_a, row.score_b
    bounded = all(0.0 <= x <= 1.0 for x in (a.low, a.high, b.low, b.high) if not np.isnan(x))
    return (100.0, " points") if bounded else (1.0, "")


def verdict(
    row: Any, result: Any, significant: bool, confidence: float, n_comparisons: int = 1
) -> str:
    """``B is better by 4.1 points [1.2, 7.0]``, ``inconclusive: ...`` (the unadjusted
    interval excludes 0 but the corrected test does not reject), or ``no detectable
    difference; ...`` with the minimum detectable effect."""
    if row.n == 0:
        return "no items scored by both runs: nothing to compare"
    k, unit = _scale(row)
    d = row.diff
    level = f"{confidence:.0%}"
    if significant:
        word = "better" if d.value > 0 else "worse"
        return (
            f"{row.model_b} is {word} by {abs(d.value) * k:.1f}{unit} "
            f"[{d.low * k:.1f}, {d.high * k:.1f}] ({level} interval, n={row.n}, "
            f"{row.test} p={row.p_adjusted:.3g} adjusted)"
        )
    mde = row.mde
    detectable = (
        f"; with n={row.n} only differences larger than {mde * k:.1f}{unit} could be "
        "detected (80% power)"
        if mde is not None and np.isfinite(mde)
        else ""
    )
    shown = f"{d.value * k:+.1f}{unit} [{d.low * k:.1f}, {d.high * k:.1f}]"
    if d.low > 0 or d.high < 0:
        p = "n/a" if row.p_adjusted is None else f"{row.p_adjusted:.3g}"
        after = f" after correcting for {n_comparisons} comparisons" if n_comparisons > 1 else ""
        return (
            f"inconclusive: {shown} ({level} interval, not adjusted) excludes 0, but the "
            f"{row.test} test does not reject (p={p}{after}){detectable}"
        )
    return f"no detectable difference: {shown}{detectable}"

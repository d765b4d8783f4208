"""Adjusting p-values when several comparisons are made at once (Holm, Benjamini-Hochberg)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["adjust"]

_METHODS = ("holm", "bh")


def _holm(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    order = np.argsort(p, kind="stable")
    m = p.size
    steps = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = steps
    return out


def _bh(p: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    order = np.argsort(p, kind="stable")
    m = p.size
    scaled = p[order] * m / np.arange(1, m + 1)
    steps = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = steps
    return out


def adjust(p_values: npt.ArrayLike, method: Literal["holm", "bh"] = "holm") -> list[float]:
    """Adjusted p-values, in the order given.

    ``"holm"`` (default) is Holm's step-down correction, which controls the family-wise error
    rate: the chance of any false claim among the comparisons. ``"bh"`` is Benjamini-Hochberg,
    which controls the false discovery rate: the expected share of false claims among those
    called significant. Computed directly (sorted cumulative max / min); the tests check them
    against ``statsmodels.stats.multitest.multipletests``, which is slower per call (it runs a
    full garbage collection each time). NaN p-values (comparisons that could not be tested, e.g. no
    items) stay NaN and do not count towards the number of comparisons.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be 'holm' or 'bh', got {method!r}")
    p = np.asarray(p_values, dtype=np.float64).reshape(-1)
    tested = ~np.isnan(p)
    if ((p[tested] < 0.0) | (p[tested] > 1.0)).any():
        raise ValueError("p-values must be between 0 and 1 (or NaN for untested)")
    out = np.full(p.shape, np.nan)
    if tested.any():
        out[tested] = (_holm if method == "holm" else _bh)(p[tested])
    return [float(v) for v in out]

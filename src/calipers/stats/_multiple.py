"""Adjusting p-values when several comparisons are made at once (statsmodels multipletests)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from statsmodels.stats.multitest import multipletests

__all__ = ["adjust"]

_METHODS = {"holm": "holm", "bh": "fdr_bh"}


def adjust(p_values: npt.ArrayLike, method: Literal["holm", "bh"] = "holm") -> list[float]:
    """Adjusted p-values, in the order given.

    ``"holm"`` (default) is Holm's step-down correction, which controls the family-wise error
    rate: the chance of any false claim among the comparisons. ``"bh"`` is Benjamini-Hochberg,
    which controls the false discovery rate: the expected share of false claims among those
    called significant. Both come from ``statsmodels.stats.multitest.multipletests``
    (``"holm"``, ``"fdr_bh"``). NaN p-values (comparisons that could not be tested, e.g. no
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
        out[tested] = multipletests(p[tested], method=_METHODS[method])[1]
    return [float(v) for v in out]

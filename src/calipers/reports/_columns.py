"""Which items a report lists, chosen from a run's columns (``SampleColumns``), so that only
the records it shows are read: a report on a million samples reads a few dozen records.

The rules are those of :func:`~calipers.reports.failing_items` and
:func:`~calipers.reports.error_items`: "failing" is a primary value below 1 on the 0-1 scale,
else the lowest value observed; errors and unscorable values (NaN) are never failing; items in
position order (then epoch, then id).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.store import SampleColumns

__all__ = [
    "error_keys",
    "failing_keys",
    "failing_mask",
    "failing_rule_of",
    "item_order",
    "scored_mask",
]

Key = tuple[str, int]


def item_order(cols: SampleColumns) -> npt.NDArray[np.intp]:
    """Row indexes in (position, epoch, sample id) order."""
    return np.lexsort((cols.sample_id.astype(str), cols.epoch, cols.position))


def scored_mask(cols: SampleColumns, metric: str | None) -> npt.NDArray[np.bool_]:
    """Rows with a value of ``metric`` that is not NaN, stored without error."""
    v = cols.scores.get(metric) if metric else None
    if v is None or metric is None:
        return np.zeros(len(cols), dtype=bool)
    return cols.ok & cols.has_score[metric] & ~np.isnan(v)


def _unit(values: npt.NDArray[Any]) -> bool:
    return bool(((values >= 0.0) & (values <= 1.0)).all())


def failing_mask(cols: SampleColumns, metric: str | None) -> npt.NDArray[np.bool_]:
    scored = scored_mask(cols, metric)
    if not scored.any() or metric is None:
        return scored
    v = cols.scores[metric]
    return scored & ((v < 1.0) if _unit(v[scored]) else (v == v[scored].min()))


def failing_keys(cols: SampleColumns, metric: str | None) -> list[Key]:
    """Every failing item's ``(sample_id, epoch)``, in position order."""
    bad = failing_mask(cols, metric)
    return [(str(cols.sample_id[i]), int(cols.epoch[i])) for i in item_order(cols) if bad[i]]


def failing_rule_of(cols: SampleColumns, metric: str) -> str:
    """:func:`~calipers.reports.failing_rule` from the columns."""
    scored = scored_mask(cols, metric)
    values = cols.scores[metric][scored] if scored.any() else np.array([])
    if _unit(values):
        return f"{metric} < 1"
    return f"{metric} = min ({float(values.min()):g})"


def error_keys(cols: SampleColumns, k: int) -> list[Key]:
    """The first ``k`` errored items' ``(sample_id, epoch)``, in position order."""
    ok = cols.ok
    out: list[Key] = []
    if ok.all():
        return out
    for i in item_order(cols):
        if not ok[i]:
            out.append((str(cols.sample_id[i]), int(cols.epoch[i])))
            if len(out) >= k:
                break
    return out

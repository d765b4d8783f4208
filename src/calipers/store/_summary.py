"""The ``runs.summary`` column: a :class:`~calipers.types.RunSummary` stored as its JSON dict.

Written as ``RunSummary.model_dump(mode="json")``; read back through :func:`read_summary`,
which knows every shape calipers has stored. The column carries no version number: the shapes
differ only by keys that later versions added, so a stored dict's version is told by its keys:

- shape 1 (before commit 201f492): no ``top_error`` or ``calls`` per task,
  no ``calls`` per run, no ``n_tampering`` or ``tampering`` per task;
- shape 2 (201f492 to 403f9bb): ``top_error`` and ``calls`` added, no tampering counts;
- shape 3 (403f9bb on, the shape of ``RunSummary`` today): ``n_tampering`` and ``tampering``.

A key an older shape lacks is read as "not recorded": ``calls`` as None (never as zero
retries), ``top_error`` as None, tampering as none flagged (scorers did not flag it then).
Anything else that does not fit is an error, not a silent guess.
"""

from __future__ import annotations

from typing import Any

from calipers.types import RunSummary

__all__ = ["read_summary", "write_summary"]

_TASK_ADDED: dict[str, Any] = {
    "top_error": None,  # shape 2
    "calls": None,  # shape 2
    "n_tampering": 0,  # shape 3
    "tampering": (),  # shape 3
}
_RUN_ADDED: dict[str, Any] = {"calls": None}  # shape 2


def read_summary(value: Any) -> RunSummary | None:
    """``value`` (a stored summary dict of any shape, a RunSummary, or None) as a RunSummary."""
    if value is None or isinstance(value, RunSummary):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("tasks"), dict):
        raise ValueError("a run summary is a dict with a 'tasks' dict")
    tasks = {
        t: ({**_TASK_ADDED, **ts} if isinstance(ts, dict) else ts)
        for t, ts in value["tasks"].items()
    }
    return RunSummary.model_validate({**_RUN_ADDED, **value, "tasks": tasks})


def write_summary(summary: RunSummary | None) -> dict[str, Any] | None:
    """The JSON dict the column stores (and ``calipers show --json`` prints)."""
    return None if summary is None else summary.model_dump(mode="json")

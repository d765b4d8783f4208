"""Which error types grew or shrank between two runs on the same items (paired, Holm).

For a task and an error type, each item both runs scored is 1 when it failed with that type
and 0 otherwise (its mean over epochs when there are several): the rate of "failed with this
type" in A and in B is compared item by item with :func:`calipers.stats.paired_compare`
(McNemar's exact test and Newcombe's paired interval for 0/1), and the p-values are adjusted
with Holm across every (task, type) row. The gate uses the same per-item indicators
(:func:`error_pair`) for its ``--max-error-growth`` rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import Paired, StoredRun
from calipers.analysis._errors import label_task, scored_samples, task_rule
from calipers.errors import ConfigError
from calipers.stats import adjust, paired_compare
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis._gate import GateRow

__all__ = [
    "ErrorChange",
    "ErrorComparison",
    "compare_errors",
    "error_gate_row",
    "error_pair",
    "gate_error_rules",
]


class ErrorChange(BaseModel):
    """One task and error type: its rate in A and B on the paired items, B − A with its
    interval, the paired test, and the Holm-adjusted p-value across all rows."""

    model_config = ConfigDict(frozen=True)

    task: str
    type: str
    n: int
    rate_a: Estimate
    rate_b: Estimate
    diff: Estimate
    test: str
    p_value: float | None
    p_adjusted: float | None
    significant: bool
    change: Literal["grew", "shrank", "no change shown"]


class ErrorComparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_a: str
    run_b: str
    correction: str = "holm"
    alpha: float
    rows: list[ErrorChange]


def _indicators(run: StoredRun, task: str) -> tuple[dict[str, list[str | None]], set[str]]:
    """Per scored item, the error type of each scored epoch (None: passed)."""
    _primary, scored = scored_samples(run, task)
    labels = label_task(run, task)
    out: dict[str, list[str | None]] = {}
    for s in scored:
        lab = labels.get(s.key)
        out.setdefault(s.sample_id, []).append(lab.type if lab else None)
    return out, {t for ts in out.values() for t in ts if t is not None}


def error_pair(a: StoredRun, b: StoredRun, task: str, error_type: str) -> Paired:
    """Per item both runs scored: the share of its epochs that failed with ``error_type``
    (``a`` and ``b``), in A's item order."""
    ia, _ = _indicators(a, task)
    ib, _ = _indicators(b, task)
    return _pair(a, b, task, error_type, ia, ib)


def _pair(
    a: StoredRun,
    b: StoredRun,
    task: str,
    error_type: str,
    ia: Mapping[str, list[str | None]],
    ib: Mapping[str, list[str | None]],
) -> Paired:
    order = {s.sample_id: (s.position, s.epoch) for s in a.samples if s.task == task}
    ids = sorted(set(ia) & set(ib), key=lambda i: order.get(i, (0, 0)))

    def rate(types: list[str | None]) -> float:
        return sum(t == error_type for t in types) / len(types)

    return Paired(
        task=task,
        metric=f"error:{error_type}",
        ids=tuple(ids),
        a=np.array([rate(ia[i]) for i in ids], dtype=np.float64),
        b=np.array([rate(ib[i]) for i in ids], dtype=np.float64),
        clusters=None,
        only_a=len(set(ia) - set(ib)),
        only_b=len(set(ib) - set(ia)),
        errors_a=sum(s.error is not None for s in a.samples if s.task == task),
        errors_b=sum(s.error is not None for s in b.samples if s.task == task),
    )


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def compare_errors(
    a: StoredRun,
    b: StoredRun,
    *,
    tasks: Sequence[str] | None = None,
    alpha: float = 0.05,
    seed: int = 0,
) -> ErrorComparison:
    """Every error type of every shared task that has a rule: B's rate against A's, paired,
    Holm-adjusted across all rows. Tasks without a rule are left out (no rows)."""
    shared = [t for t in a.record.tasks if t in b.record.tasks]
    rows: list[ErrorChange] = []
    for task in [t for t in shared if not tasks or t in tasks]:
        if task_rule(a, task) is None:
            continue
        ia, types_a = _indicators(a, task)
        ib, types_b = _indicators(b, task)
        for et in sorted(types_a | types_b):
            p = _pair(a, b, task, et, ia, ib)
            res = paired_compare(p.a, p.b, rng=derived_rng(seed, task, et), alpha=alpha)
            rows.append(
                ErrorChange(
                    task=task,
                    type=et,
                    n=res.n,
                    rate_a=res.mean_a,
                    rate_b=res.mean_b,
                    diff=res.diff,
                    test=res.test,
                    p_value=_num(res.p_value),
                    p_adjusted=None,
                    significant=False,
                    change="no change shown",
                )
            )
    adjusted = adjust([r.p_value if r.p_value is not None else math.nan for r in rows])
    final = []
    for r, p_adj in zip(rows, adjusted, strict=True):
        sig = not math.isnan(p_adj) and p_adj < alpha
        change = "no change shown"
        if sig:
            change = "grew" if r.diff.value > 0 else "shrank"
        final.append(
            r.model_copy(update={"p_adjusted": _num(p_adj), "significant": sig, "change": change})
        )
    final.sort(key=lambda r: (not r.significant, -abs(r.diff.value or 0.0), r.task, r.type))
    return ErrorComparison(run_a=a.record.id, run_b=b.record.id, alpha=alpha, rows=final)


# -- the gate's error rules -------------------------------------------------------------------


def gate_error_rules(
    baseline: StoredRun, tasks: Sequence[str], growth: Mapping[str, float]
) -> list[tuple[str, str, float]]:
    """``(task, type, allowed growth)`` for every rule and every task whose rule can give
    that type; a type no task can give is an error (a typo would pass silently)."""
    out: list[tuple[str, str, float]] = []
    rules = {t: task_rule(baseline, t) for t in tasks}
    for et, m in growth.items():
        if not m > 0:
            raise ConfigError(f"The allowed growth of {et!r} must be positive, got {m!r}.")
        hits = [(t, et, m) for t, r in rules.items() if r is not None and r.can_give(et)]
        if not hits:
            known = sorted({x for r in rules.values() if r is not None for x in r.types})
            raise ConfigError(
                f"No task of this gate can have the error type {et!r}.",
                hint=f"Types these tasks can have: {', '.join(known) or 'none (no rule)'}.",
            )
        out += hits
    return out


def _flip(e: Estimate, sign: float = 1.0) -> Estimate:
    """``1 - e`` (sign 1) or ``-e`` (sign -1)."""
    if sign > 0:
        return Estimate(1 - e.value, 1 - e.high, 1 - e.low, e.n, e.method, e.confidence)
    return Estimate(0.0 - e.value, 0.0 - e.high, 0.0 - e.low, e.n, e.method, e.confidence)


def error_gate_row(row: GateRow, error_type: str) -> GateRow:
    """A gate row judged on "free of ``error_type``" (so that the gate's non-inferiority
    test reads "may not grow by more than m"), told as the error's own rate."""
    d = _flip(row.diff, -1.0)
    m = row.max_drop
    shown = (
        f"candidate − baseline = {100 * d.value:+.1f} points [{100 * d.low:+.1f}, "
        f"{100 * d.high:+.1f}] ({100 * d.confidence:.4g}% interval, n={row.n:,})"
    )
    bound = f"+{100 * m:.1f} points"
    if row.n == 0:
        text = "inconclusive: no item was scored by both runs"
    elif row.verdict == "pass":
        text = f"{error_type} did not grow by more: {shown}; its high end is below {bound}"
    elif row.verdict == "fail":
        text = f"{error_type} grew: {shown}; the whole interval is above the allowed {bound}"
    else:
        need = f"; needs about {row.items_needed:,} items" if row.items_needed else ""
        text = f"inconclusive: {error_type} {shown} contains the allowed growth of {bound}{need}"
    return row.model_copy(
        update={
            "baseline": _flip(row.baseline),
            "candidate": _flip(row.candidate),
            "diff": d,
            "explanation": text,
        }
    )

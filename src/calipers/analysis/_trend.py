"""A model's score on one task over time: runs in order, methodology changes, changepoints.

Which runs: the finished runs that include the task and whose model spec (``-m`` as given) or
resolved model name (the methodology card's ``model.name``) equals MODEL, as ``calipers runs
--model`` matches them, oldest first. A model whose identity changed under that name (another
file hash, another API model id or quantization) stays in the series and is marked: a silent
change of the model is what a trend is for, so it is tested across, never a break.

Methodology changes are breaks: two consecutive runs whose task methodology differs (prompt
template, task version or items, few-shot, chat template, system prompt, decoding, scorers,
...) measured different things, so the changepoint test runs within each stretch of identical
methodology only and a methodology change is never reported as a regression. Not compared:
the item count and the data source (recorded, not a change of what is measured), and for a
dynamic task the data hash (every seed draws fresh items from the same generator version).

A regression: in the latest stretch, the last change found (``stats.changepoints``) goes down
by at least ``min_drop``. The false-alarm rate of that alert is at most ``alpha`` per stretch.
Metrics are read higher-is-better, as the leaderboard reads them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np
from scipy import stats as sps

from calipers.errors import ConfigError
from calipers.runner import Methodology
from calipers.stats import Changepoint, Segmentation, changepoints, wilson
from calipers.store import RunRecord, Store
from calipers.types import Estimate

__all__ = [
    "MethodologyChange",
    "ModelChange",
    "Regression",
    "TrendPoint",
    "TrendReport",
    "TrendStretch",
    "trend",
]

# Not a change of what is measured (see the module docstring).
# prompt_hash is the template's hash: the template itself is compared (and shown).
_NOT_COMPARED = {
    "limit",
    "n_items",
    "chat_template_hash",
    "data_source",
    "formulation_fallback",
    "prompt_hash",
}
_SHOWN = 48  # characters of an old or new value in a change's description


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run: when, its estimate and standard error, its stretch of identical methodology."""

    run_id: str
    created_at: datetime
    estimate: Estimate
    se: float
    stretch: int
    model_spec: str
    model_key: str


@dataclass(frozen=True, slots=True)
class MethodologyChange:
    """The methodology changes at point ``index`` (run ``run_id``): what changed."""

    index: int
    run_id: str
    changes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ModelChange:
    """The model's identity changes at point ``index`` under the same name: which fields."""

    index: int
    run_id: str
    changes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TrendStretch:
    """Points ``[start, end)`` of identical methodology and the changepoints found in them
    (indices are the series', not the stretch's)."""

    start: int
    end: int
    segmentation: Segmentation | None  # None: fewer than two points, nothing to test


@dataclass(frozen=True, slots=True)
class Regression:
    """The latest segment is lower than the one before by ``change.shift`` (at least
    ``min_drop``): from run ``run_id`` on."""

    change: Changepoint
    run_id: str
    before: Estimate
    after: Estimate


@dataclass(frozen=True)
class TrendReport:
    model: str
    task: str
    metric: str
    points: tuple[TrendPoint, ...]
    methodology_changes: tuple[MethodologyChange, ...]
    model_changes: tuple[ModelChange, ...]
    stretches: tuple[TrendStretch, ...]
    regression: Regression | None
    alpha: float
    min_drop: float  # in the metric's units
    unit_scale: bool  # every estimate in [0, 1]: shown in percent, thresholds in points
    left_out: tuple[tuple[str, str], ...] = ()  # (run id, why)
    notes: tuple[str, ...] = field(default=())

    @property
    def changes(self) -> list[Changepoint]:
        return [c for s in self.stretches if s.segmentation for c in s.segmentation.changes]

    def to_dict(self) -> dict[str, Any]:
        def change(c: Changepoint) -> dict[str, Any]:
            return {
                "index": c.index,
                "run_id": self.points[c.index].run_id,
                "where": [self.points[c.where[0]].run_id, self.points[c.where[1]].run_id],
                "shift": c.shift.to_dict(),
                "statistic": c.statistic,
                "p_value": c.p_value,
                "level": c.level,
            }

        out: dict[str, Any] = {
            "model": self.model,
            "task": self.task,
            "metric": self.metric,
            "alpha": self.alpha,
            "min_drop": self.min_drop,
            "unit_scale": self.unit_scale,
            "regression": None,
            "points": [
                {
                    "run_id": p.run_id,
                    "created_at": p.created_at.isoformat(),
                    "estimate": p.estimate.to_dict(),
                    "se": p.se,
                    "stretch": p.stretch,
                    "model_spec": p.model_spec,
                }
                for p in self.points
            ],
            "methodology_changes": [
                {"index": m.index, "run_id": m.run_id, "changes": list(m.changes)}
                for m in self.methodology_changes
            ],
            "model_changes": [
                {"index": m.index, "run_id": m.run_id, "changes": list(m.changes)}
                for m in self.model_changes
            ],
            "stretches": [
                {
                    "start": s.start,
                    "end": s.end,
                    "tested": s.segmentation is not None,
                    "changes": [change(c) for c in s.segmentation.changes]
                    if s.segmentation
                    else [],
                    "segments": [
                        {"start": g.start, "end": g.end, "mean": g.mean.to_dict()}
                        for g in s.segmentation.segments
                    ]
                    if s.segmentation
                    else [],
                }
                for s in self.stretches
            ],
            "left_out": [{"run_id": r, "why": w} for r, w in self.left_out],
            "notes": list(self.notes),
        }
        if self.regression is not None:
            r = self.regression
            out["regression"] = {
                "run_id": r.run_id,
                "change": change(r.change),
                "before": r.before.to_dict(),
                "after": r.after.to_dict(),
            }
        return out


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _diff(a: dict[str, Any], b: dict[str, Any], prefix: str = "") -> list[str]:
    """``field: old → new`` for every field that differs (dicts compared key by key)."""
    out = []
    for k in sorted(set(a) | set(b), key=lambda k: (list(a) + list(b)).index(k)):
        va, vb = a.get(k), b.get(k)
        if va == vb:
            continue
        if isinstance(va, dict) and isinstance(vb, dict):
            out += _diff(va, vb, f"{prefix}{k}.")
        else:
            out.append(f"{prefix}{k}: {_short(va)} → {_short(vb)}")
    return out


def _task_card(card: Methodology, task: str) -> dict[str, Any]:
    tm = card.tasks[task]
    skip = _NOT_COMPARED | ({"data_hash"} if tm.dynamic else set())
    data = tm.model_dump(mode="json", exclude=skip)
    return {k: v for k, v in data.items() if v is not None}


def _se(est: Estimate) -> float | None:
    """The standard error behind an interval: its half-width over z; a zero-width interval
    of a rate (every item right) gets the Wilson interval's, which is never zero."""
    z = float(sps.norm.ppf(0.5 + est.confidence / 2))
    se = (est.high - est.low) / (2 * z)
    if math.isfinite(se) and se > 0:
        return se
    if 0 <= est.value <= 1 and est.n > 0:
        w = wilson(round(est.value * est.n), est.n, est.confidence)
        return (w.high - w.low) / (2 * z)
    return None


def _metric(runs: Sequence[RunRecord], task: str, metric: str | None) -> str:
    summaries = [ts for r in runs if (ts := r.task_summary(task)) is not None]
    known = sorted({m for ts in summaries for m in ts.metrics})
    if metric is None:
        primary = next((ts.primary for ts in reversed(summaries) if ts.primary), None)
        if primary is None:
            raise ConfigError(f"The runs of {task!r} have no primary metric.", hint=_pick(known))
        return primary
    if metric not in known:
        raise ConfigError(
            f"No run of {task!r} has a metric {metric!r}.", hint=_pick(known) if known else None
        )
    return metric


def _pick(known: Sequence[str]) -> str:
    return f"Choose one with --metric: {', '.join(known)}."


def _select(
    store: Store, model: str, task: str, since: datetime | None
) -> tuple[list[RunRecord], list[tuple[str, str]]]:
    runs = list(reversed(store.list_runs(model=model, task=task)))
    if since is not None:
        runs = [r for r in runs if r.created_at >= since]
    if not runs:
        after = f" since {since:%Y-%m-%d %H:%M} UTC" if since else ""
        raise ConfigError(
            f"No runs of {model!r} on {task!r}{after} are stored.",
            hint="MODEL is a model spec as given to -m or its name (calipers runs lists "
            "them); make runs with calipers run -m MODEL -t TASK (--config FILE to repeat one).",
        )
    kept, left = [], []
    for r in runs:
        if r.status != "finished" or r.summary is None:
            left.append((r.id, f"not finished ({r.status})"))
        else:
            kept.append(r)
    if not kept:
        raise ConfigError(
            f"None of the {len(runs)} run(s) of {model!r} on {task!r} finished.",
            hint="Finish one with calipers run --resume RUN.",
        )
    return kept, left


def _points(
    runs: Sequence[RunRecord], task: str, metric: str, left: list[tuple[str, str]]
) -> tuple[list[TrendPoint], list[MethodologyChange], list[ModelChange]]:
    points: list[TrendPoint] = []
    mchanges: list[MethodologyChange] = []
    ids: list[ModelChange] = []
    prev: tuple[dict[str, Any], dict[str, Any]] | None = None
    stretch = 0
    for r in runs:
        ts = r.task_summary(task)
        est = ts.metrics.get(metric) if ts else None
        if est is None or est.is_empty:
            left.append((r.id, f"no {metric} score" if est is None else "nothing scored (n=0)"))
            continue
        se = _se(est)
        if se is None:
            left.append((r.id, f"no interval on {metric}"))
            continue
        card = Methodology.model_validate(r.methodology)
        now = (_task_card(card, task), card.model.model_dump(mode="json"))
        i = len(points)
        if prev is not None:
            if changed := _diff(prev[0], now[0]):
                stretch += 1
                mchanges.append(MethodologyChange(i, r.id, tuple(changed)))
            if changed := _diff(prev[1], now[1]):
                ids.append(ModelChange(i, r.id, tuple(changed)))
        prev = now
        points.append(TrendPoint(r.id, r.created_at, est, se, stretch, r.model, card.model.key()))
    return points, mchanges, ids


def _null_ses(points: Sequence[TrendPoint]) -> list[float]:
    """The runs' standard errors for the test. Plain proportions (Wilson intervals): the
    binomial ones under "no change", ``sqrt(p(1-p)/n_i)`` with the stretch's pooled ``p``, as
    a score test uses, so a run's weight does not depend on its own luck (each run's own
    error gave 1.5% false alarms at alpha 1% in simulation, the pooled one 1.0%); otherwise
    each run's own, from its interval."""
    ests = [p.estimate for p in points]
    if all(e.method == "wilson" for e in ests):
        pooled = sum(e.value * e.n for e in ests) / sum(e.n for e in ests)
        if 0 < pooled < 1:
            return [math.sqrt(pooled * (1 - pooled) / e.n) for e in ests]
    return [p.se for p in points]


def _stretches(
    points: Sequence[TrendPoint], alpha: float, seed: int, n_sim: int
) -> list[TrendStretch]:
    out = []
    rng = np.random.default_rng(seed)
    for k in sorted({p.stretch for p in points}):
        idx = [i for i, p in enumerate(points) if p.stretch == k]
        a, b = idx[0], idx[-1] + 1
        seg = None
        if b - a >= 2:
            found = changepoints(
                [p.estimate.value for p in points[a:b]],
                _null_ses(points[a:b]),
                rng,
                alpha=alpha,
                n_sim=n_sim,
                n_boot=n_sim,
                confidence=points[a].estimate.confidence,
            )
            seg = _pooled_means(_offset(found, a), points)
        out.append(TrendStretch(a, b, seg))
    return out


def _pooled_means(s: Segmentation, points: Sequence[TrendPoint]) -> Segmentation:
    """Plain proportions: each segment's level as the Wilson interval of its pooled counts
    (inside [0, 1], as every rate calipers prints), not the inverse-variance normal mean,
    which gave SmolLM2's 0/30, 1/30, 0/30 "1.1% [-1.1, 3.3]"."""
    if not all(p.estimate.method == "wilson" for p in points):
        return s
    segments = []
    for g in s.segments:
        ests = [p.estimate for p in points[g.start : g.end]]
        hits = sum(round(e.value * e.n) for e in ests)
        segments.append(replace(g, mean=wilson(hits, sum(e.n for e in ests), ests[0].confidence)))
    return replace(s, segments=tuple(segments))


def _offset(s: Segmentation, a: int) -> Segmentation:
    return replace(
        s,
        changes=tuple(
            replace(
                c,
                index=c.index + a,
                where=(c.where[0] + a, c.where[1] + a),
                start=c.start + a,
                end=c.end + a,
            )
            for c in s.changes
        ),
        segments=tuple(replace(g, start=g.start + a, end=g.end + a) for g in s.segments),
        tests=tuple(
            replace(t, start=t.start + a, end=t.end + a, index=t.index + a) for t in s.tests
        ),
    )


def _regression(
    points: Sequence[TrendPoint], last: TrendStretch, min_drop: float
) -> tuple[Regression | None, list[str]]:
    seg = last.segmentation
    if seg is None:
        if len(points) >= 2:
            return None, ["the latest methodology has one run: nothing to compare it with yet"]
        return None, ["one run: nothing to compare it with yet"]
    if not seg.changes:
        return None, []
    change = seg.changes[-1]
    before, after = seg.segments[-2].mean, seg.segments[-1].mean
    if change.shift.value <= -min_drop:
        return Regression(change, points[change.index].run_id, before, after), []
    if change.shift.value < 0:
        return None, [
            f"the latest change is down by {-change.shift.value:.4g}, less than the "
            f"practical threshold {min_drop:.4g}: not a regression"
        ]
    return None, []


def trend(
    store: Store,
    model: str,
    task: str,
    *,
    metric: str | None = None,
    since: datetime | None = None,
    alpha: float = 0.05,
    min_drop: float = 2.0,
    seed: int = 0,
    n_sim: int = 4999,
) -> TrendReport:
    """``metric`` (default: the task's primary metric) of ``model`` on ``task`` over time,
    with methodology changes, changepoints found at family-wise level ``alpha`` within each
    stretch of one methodology, and a regression when the latest stretch's last change goes
    down by ``min_drop`` points or more (percentage points when every estimate lies in
    [0, 1], the metric's own units otherwise). ``seed`` makes the simulated
    null distributions and intervals repeatable. Raises ConfigError when no run matches or
    the metric is unknown."""
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, not {alpha}.")
    if min_drop < 0:
        raise ConfigError(f"The practical threshold must not be negative, not {min_drop}.")
    runs, left = _select(store, model, task, since)
    name = _metric(runs, task, metric)
    points, mchanges, ids = _points(runs, task, name, left)
    if not points:
        raise ConfigError(
            f"No finished run of {model!r} on {task!r} scored {name!r}.",
            hint="Left out: " + "; ".join(f"{r}: {w}" for r, w in left),
        )
    unit = all(p.estimate.low >= 0 and p.estimate.high <= 1 for p in points)
    drop = min_drop / 100 if unit else min_drop
    stretches = _stretches(points, alpha, seed, n_sim)
    regression, notes = _regression(points, stretches[-1], drop)
    return TrendReport(
        model,
        task,
        name,
        tuple(points),
        tuple(mchanges),
        tuple(ids),
        tuple(stretches),
        regression,
        alpha,
        drop,
        unit,
        tuple(left),
        tuple(notes),
    )

"""``/trend?model=M&task=T``: a model's score on a task over time, as ``calipers trend``, with
its JSON twin under ``/api/trend``."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from calipers.analysis import TrendReport, trend
from calipers.errors import CalipersError, ConfigError
from calipers.web._charts import Marker, Series, TimePoint, time_series_svg
from calipers.web._pages import Text, store_of
from calipers.web._render import json_response, page

__all__ = ["router"]

router = APIRouter()

Num = Annotated[float | None, Query()]


def _between(report: TrendReport, i: int) -> datetime:
    """Half-way between point ``i - 1`` and point ``i``: where a change is drawn."""
    a, b = report.points[i - 1].created_at, report.points[i].created_at
    return a + (b - a) / 2


def _series(report: TrendReport) -> list[Series]:
    """One series per stretch of identical methodology: never joined across a change."""
    stretches = sorted({p.stretch for p in report.points})
    return [
        Series(
            f"runs, methodology {k + 1}" if len(stretches) > 1 else "runs",
            [TimePoint(p.created_at, p.estimate) for p in report.points if p.stretch == k],
        )
        for k in stretches
    ]


def _markers(report: TrendReport) -> list[Marker]:
    unit = report.unit_scale
    out = [
        Marker(
            _between(report, m.index),
            "methodology: " + ", ".join(c.split(":")[0] for c in m.changes),
            "method-marker",
        )
        for m in report.methodology_changes
    ]
    out += [
        Marker(
            _between(report, m.index),
            "model: " + ", ".join(c.split(":")[0] for c in m.changes),
            "model-marker",
        )
        for m in report.model_changes
    ]
    for c in report.changes:
        size = f"{100 * c.shift.value:+.1f} pts" if unit else f"{c.shift.value:+.3g}"
        css = "alert-marker" if c.shift.value < 0 else "rise-marker"
        out.append(Marker(_between(report, c.index), f"change {size} (p={c.p_value:.2g})", css))
    return out


def _chart(report: TrendReport) -> Markup:
    conf = report.points[0].estimate.confidence
    return time_series_svg(
        _series(report),
        title=f"{report.model} · {report.task} · {report.metric} per run, {conf:.0%} intervals",
        markers=_markers(report),
    )


def _marks(report: TrendReport) -> dict[int, list[str]]:
    unit = report.unit_scale
    out: dict[int, list[str]] = {}
    for m in report.methodology_changes:
        out.setdefault(m.index, []).append("methodology changed: " + "; ".join(m.changes))
    for mc in report.model_changes:
        out.setdefault(mc.index, []).append("model identity changed: " + "; ".join(mc.changes))
    for c in report.changes:
        s = c.shift
        size = (
            f"{100 * s.value:+.1f} pts [{100 * s.low:+.1f}, {100 * s.high:+.1f}]"
            if unit
            else f"{s.value:+.3g} [{s.low:+.3g}, {s.high:+.3g}]"
        )
        out.setdefault(c.index, []).append(f"change {size}, p={c.p_value:.2g}")
    return out


def _pairs(request: Request) -> list[tuple[str, str, int]]:
    """(model, task, runs) of the stored finished runs, commonest first: where to start."""
    counts: Counter[tuple[str, str]] = Counter()
    for r in store_of(request).list_runs(limit=2000):
        if r.status == "finished":
            for t in r.tasks:
                counts[(r.model_name or r.model, t)] += 1
    return [(m, t, n) for (m, t), n in counts.most_common(50)]


def _report(
    request: Request,
    model: str | None,
    task: str | None,
    metric: str | None,
    alpha: float | None,
    min_drop: float | None,
) -> TrendReport | None:
    if not model or not task:
        return None
    return trend(
        store_of(request),
        model,
        task,
        metric=metric or None,
        alpha=0.05 if alpha is None else alpha,
        min_drop=2.0 if min_drop is None else min_drop,
    )


@router.get("/trend", response_class=HTMLResponse)
def trend_page(
    request: Request,
    model: Text = None,
    task: Text = None,
    metric: Text = None,
    alpha: Num = None,
    min_drop: Num = None,
) -> Response:
    report, problem = None, None
    try:
        report = _report(request, model, task, metric, alpha, min_drop)
    except ConfigError as e:  # no runs, unknown metric: said on the page
        problem = e
    context: dict[str, Any] = {
        "q": {
            "model": model or "",
            "task": task or "",
            "metric": metric or "",
            "alpha": "" if alpha is None else f"{alpha:g}",
            "min_drop": "" if min_drop is None else f"{min_drop:g}",
        },
        "report": report,
        "problem": problem,
        "pairs": _pairs(request) if report is None else [],
    }
    if report is not None:
        context |= {"chart": _chart(report), "marks": _marks(report), "pct": report.unit_scale}
    return page(request, "trend.html.j2", 200, **context)


@router.get("/api/trend")
def api_trend(
    request: Request,
    model: Text = None,
    task: Text = None,
    metric: Text = None,
    alpha: Num = None,
    min_drop: Num = None,
) -> Response:
    """As ``calipers trend MODEL TASK --json``."""
    if not model or not task:
        return json_response(
            {"error": "Give model and task.", "hint": "/api/trend?model=M&task=T"}, 400
        )
    try:
        report = _report(request, model, task, metric, alpha, min_drop)
    except CalipersError as e:
        return json_response({"error": e.message, "hint": e.hint}, 400)
    assert report is not None
    return json_response(report.to_dict())

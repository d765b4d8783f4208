"""What the Monitor page shows of a :class:`MonitorReport`: one chart per metric (a series per
arm, intervals as bands, drift alarms as ``alert-marker`` lines at the window's middle), the
alarms as a table, the novelty lists, and the exact ``calipers monitor export`` commands."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from markupsafe import Markup

from calipers.monitor import RAG_METRICS, MonitorConfig, MonitorReport, WindowDrift
from calipers.reports import clip, count_axis
from calipers.types import Estimate
from calipers.web._charts import Marker, Series, TimePoint, time_series_svg
from calipers.web._params import command, iso

__all__ = [
    "BUILTIN_METRICS",
    "ChartView",
    "export_args",
    "fingerprint_rows",
    "middle",
    "monitor_view",
]

BUILTIN_METRICS: dict[str, str] = {
    "volume": "volume: calls per window",
    "latency_p50_ms": "latency p50 (ms) of answered calls",
    "latency_p95_ms": "latency p95 (ms) of answered calls",
    "error_rate": "error rate",
    "refusal_rate": "refusal rate of answered calls",
    "cost_per_request_usd": "cost per request (USD)",
}
MAX_OUTLIERS, MAX_EXAMPLES, PROMPT_CHARS = 25, 3, 400


@dataclass(frozen=True, slots=True)
class ChartView:
    """One metric: its chart, or (no data in any window) why there is none."""

    metric: str
    title: str
    svg: Markup | None
    note: str = ""


def middle(start: datetime, end: datetime) -> datetime:
    """Where a window's points and markers are drawn: the middle of ``[start, end)``."""
    return start + (end - start) / 2


def _when(report: MonitorReport, t: datetime) -> str:
    return f"{t:%Y-%m-%d}" if report.window.total_seconds() >= 86400 else f"{t:%m-%d %H:%M}"


def _features(w: WindowDrift) -> list[str]:
    return list(dict.fromkeys(r.feature for r in w.alarms))


def _markers(report: MonitorReport) -> list[Marker]:
    return [
        Marker(middle(w.start, w.end), f"drift: {', '.join(_features(w))}")
        for w in report.drift
        if w.alarms
    ]


def _metric_names(report: MonitorReport) -> list[str]:
    """The built-in metrics, then those of RAG traffic (only when it has any), then online
    scores and feedback."""
    extra = sorted(
        {k for w in report.windows for m in w.arms.values() for k in m if k not in BUILTIN_METRICS},
        key=lambda k: (k not in RAG_METRICS, k == "feedback", k),
    )
    return [*BUILTIN_METRICS, *extra]


def _skip_note(ests: Sequence[Estimate]) -> str:
    reasons = sorted(
        {e.method.removeprefix("skipped: ") for e in ests if e.method.startswith("skipped")}
    )
    if reasons:
        hint = (
            " (add price=baseline=IN/OUT&price=candidate=IN/OUT, USD per million tokens)"
            if any("prices" in r for r in reasons)
            else ""
        )
        return f"skipped: {'; '.join(reasons)}{hint}"
    return "no data in any window"


def charts(report: MonitorReport) -> list[ChartView]:
    markers = _markers(report)
    arms = list(dict.fromkeys(a for w in report.windows for a in w.arms))
    out = []
    for metric in _metric_names(report):
        title = {**BUILTIN_METRICS, **RAG_METRICS}.get(
            metric, f"{metric} (online score)" if metric != "feedback" else "user feedback"
        )
        series = [
            Series(
                arm,
                [
                    TimePoint(
                        middle(w.start, w.end), w.arms.get(arm, {}).get(metric, Estimate.empty())
                    )
                    for w in report.windows
                ],
            )
            for arm in arms
        ]
        ests = [p.est for s in series for p in s.points]
        if all(e.is_empty or not math.isfinite(e.value) for e in ests):
            out.append(ChartView(metric, title, None, _skip_note(ests)))
            continue
        conf = (
            ""
            if metric == "volume"
            else f", {100 * report.settings.get('confidence', 0.95):g}% intervals"
        )
        out.append(
            ChartView(
                metric,
                title,
                time_series_svg(
                    series,
                    title=f"{title} per window{conf}",
                    markers=markers,
                    x_range=(report.since, report.until),
                    y_axis=count_axis(ests) if metric == "volume" else None,
                ),
            )
        )
    return out


def _num(v: float, fmt: str) -> str:
    return "" if not math.isfinite(v) else format(v, fmt)


def alarm_rows(report: MonitorReport) -> list[dict[str, Any]]:
    rows = []
    for w in report.drift:
        for r in w.alarms:
            t = r.test
            rows.append(
                {
                    "window": _when(report, w.start),
                    "start": iso(w.start),
                    "feature": r.feature,
                    "kind": r.kind,
                    "test": t.test,
                    "statistic": _num(t.statistic, ".4g"),
                    "threshold": _num(t.threshold, ".4g"),
                    "p": _num(t.p_value, ".2g"),
                    "p_adjusted": _num(t.p_adjusted, ".2g"),
                    "detail": r.detail,
                    "n": f"{t.n_reference:,} / {t.n_current:,}",
                }
            )
    return rows


def window_rows(report: MonitorReport) -> list[dict[str, Any]]:
    """Each window, its requests and its drift tests: ``reference`` for the window that is the
    reference period, ``not tested`` for one without traffic (or without a reference)."""
    tested = {w.start: w for w in report.drift}
    a, b, _n = report.reference
    in_ref = report.reference_problem is None and a < b
    out = []
    for w in report.windows:
        d = tested.get(w.start)
        status = (
            str(len(d.rows)) if d else "reference" if in_ref and a <= w.start < b else "not tested"
        )
        out.append(
            {
                "window": _when(report, w.start),
                "start": iso(w.start),
                "n": w.n_requests,
                "tests": status,
                "alarms": _features(d) if d else [],
                "sample": (
                    f"drift tested on a sample of {d.sample[0]:,} of {d.sample[1]:,}"
                    if d and d.sample
                    else ""
                ),
            }
        )
    return out


def _duration(d: timedelta) -> str:
    s = d.total_seconds()
    for unit, size in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)):
        if s % size == 0:
            return f"{int(s // size)}{unit}"
    return f"{s:g}s"


def export_args(report: MonitorReport, c: MonitorConfig) -> list[str]:
    """The options of ``calipers monitor`` that reproduce this report exactly."""
    args = [
        "--since",
        iso(report.since),
        "--until",
        iso(report.until),
        "--window",
        _duration(c.window),
    ]
    if c.reference is not None:
        args += ["--reference", f"{iso(c.reference[0])}..{iso(c.reference[1])}"]
    args += ["--alpha", f"{c.alpha:g}"] if c.alpha != 0.05 else []
    for arm, (a, b) in c.prices.items():
        args += ["--price", f"{a:g}/{b:g}" if arm == "*" else f"{arm}={a:g}/{b:g}"]
    for s in c.suites:
        args += ["--suite", s]
    for m in c.modes or ():
        args += ["--mode", m]
    args += ["--embeddings", c.embeddings]
    args += ["--embedding-test", c.embedding_test] if c.embedding_test != "mmd" else []
    args += ["--latest"] if c.latest_only else []
    args += ["--novelty", c.novelty] if c.novelty != "latest" else []
    args += ["--outlier-quantile", f"{c.outlier_quantile:g}"] if c.outlier_quantile != 0.01 else []
    args += ["--min-cluster", str(c.min_cluster)] if c.min_cluster != 3 else []
    args += ["--sample", str(c.sample)] if c.sample != MonitorConfig().sample else []
    args += ["--seed", str(c.seed)] if c.seed != 0 else []
    return args


def _novelty(report: MonitorReport) -> dict[str, Any] | None:
    n = report.novelty
    if n is None:
        return None
    outliers = [
        {
            "pair_id": o.exchange.pair_id,
            "ts": o.exchange.ts,
            "prompt": clip(o.exchange.prompt, PROMPT_CHARS),
            "similarity": f"{o.similarity:.3f}",
            "p": f"{o.p_value:.3g}",
            "cluster": o.cluster,
        }
        for o in n.outliers[:MAX_OUTLIERS]
    ]
    clusters = [
        {
            "id": c.id,
            "size": c.size,
            "name": c.name,
            "examples": [clip(e, PROMPT_CHARS) for e in c.examples[:MAX_EXAMPLES]],
            "suite_similarity": _num(c.suite_similarity, ".3f"),
        }
        for c in n.clusters
    ]
    return {
        "n": n,
        "outliers": outliers,
        "clusters": clusters,
        "more": max(0, len(n.outliers) - MAX_OUTLIERS),
        "uncovered": n.suite_uncovered.format(percent=True) if n.n_suite_items else None,
    }


def _interval(e: Estimate) -> str:
    if e.method.endswith("-empty"):
        return f"{e.value:.4f} (no single mean fits every look: it moved)"
    if e.is_empty or math.isnan(e.low):
        return f"{e.value:.4f} (no interval yet)" if not math.isnan(e.value) else "n/a"
    return f"{e.value:.4f} [{e.low:.4f}, {e.high:.4f}]"


def fingerprint_rows(report: MonitorReport) -> list[dict[str, Any]]:
    """One row per fingerprint canary: its state in words and both intervals."""
    return [
        {
            "canary": f.canary,
            "model": f.model,
            "state": f.verdict.state,
            "alarm": f.alarm,
            "headline": f.headline(),
            "looks": f.verdict.looks,
            "failed": f.n_failed,
            "estimate": _interval(f.verdict.estimate),
            "reference": _interval(f.verdict.reference),
            "confidence": f"{f.verdict.estimate.confidence:.1%}",
            "last": f"{f.last:%Y-%m-%d %H:%M}" if f.last else "",
            "last_error": f.last_error or "",
        }
        for f in report.fingerprint
    ]


def monitor_view(report: MonitorReport, config: MonitorConfig, store_url: str) -> dict[str, Any]:
    """The template variables of the Monitor page."""
    base = ["calipers", "--store", store_url, "monitor"]
    args = export_args(report, config)
    drifted = [w for w in report.drift if w.alarms]
    return {
        "charts": charts(report),
        "alarms": alarm_rows(report),
        "windows": window_rows(report),
        "drifted": [{"window": _when(report, w.start), "features": _features(w)} for w in drifted],
        "n_tested": len(report.drift),
        "novelty": _novelty(report),
        "reference": {
            "start": report.reference[0],
            "end": report.reference[1],
            "n": report.reference[2],
            "why": report.reference_why,
            "problem": report.reference_problem,
        },
        "n_requests": sum(w.n_requests for w in report.windows),
        "fingerprints": fingerprint_rows(report),
        "window": _duration(report.window),
        "commands": {
            "report": command([*base, *args]),
            "suite": command([*base, "export", *args, "--to-suite", "NAME"]),
            "review": command([*base, "export", *args, "--to-review", "queue.jsonl"]),
        },
    }

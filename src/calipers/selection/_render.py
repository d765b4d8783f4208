"""The decision report: Markdown for reading in a terminal or a pull request, and a
self-contained HTML page (inline SVG, no scripts, no CDN) with the Pareto chart."""

from __future__ import annotations

import html
from typing import Any

from calipers.selection._select import ModelResult, SelectionResult

__all__ = ["pareto_svg", "to_html", "to_markdown"]


def _pct(e: dict[str, Any] | None) -> str:
    if not e:
        return "missing"
    return f"{100 * e['value']:.1f} [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def _num(e: dict[str, Any] | None, unit: str) -> str:
    if not e:
        return "missing"
    hi = "∞" if e.get("high") is None else f"{e['high']:.3g}"
    lo = "?" if e.get("low") is None else f"{e['low']:.3g}"
    return f"{e['value']:.3g}{unit} [{lo}, {hi}]"


def _axis(models: list[ModelResult]) -> tuple[str, str] | None:
    for key, label in (
        ("cost_per_1000_usd", "cost per 1,000 items (USD)"),
        ("latency_p95_s", "latency p95 (s)"),
    ):
        if sum(1 for m in models if m.weighted and getattr(m, key)) >= 1:
            return key, label
    return None


def pareto_svg(result: SelectionResult, width: int = 640, height: int = 360) -> str:
    """Weighted score (with its interval) against cost, or latency where no model has a
    cost; Pareto-optimal models filled. Axes start at zero: nothing is exaggerated."""
    models = [m for m in result.models if m.weighted]
    axis = _axis(models)
    if axis is None:
        return (
            "<p><em>No chart: no model has both a weighted score and a measured cost or "
            "latency.</em></p>"
        )
    key, xlabel = axis
    pts = [(m, getattr(m, key)["value"]) for m in models if getattr(m, key)]
    left, right, top, bottom = 60, width - 20, 20, height - 50
    highs = [getattr(m, key).get("high") for m, _x in pts]
    xmax = max([x for _m, x in pts] + [h for h in highs if h is not None]) * 1.15 or 1.0

    def sx(x: float) -> float:
        return left + (right - left) * x / xmax

    def sy(y: float) -> float:
        return bottom - (bottom - top) * min(max(y, 0.0), 1.0)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" font-family="sans-serif" font-size="12">',
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>',
        f'<text x="{(left + right) / 2}" y="{height - 10}" text-anchor="middle">'
        f"{html.escape(xlabel)}</text>",
        f'<text x="15" y="{(top + bottom) / 2}" transform="rotate(-90 15 '
        f'{(top + bottom) / 2})" text-anchor="middle">weighted score (%)</text>',
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{left - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{int(100 * v)}</text>'
        )
    for i in range(5):
        x = xmax * i / 4
        parts.append(f'<text x="{sx(x):.1f}" y="{bottom + 16}" text-anchor="middle">{x:.3g}</text>')
    for m, x in pts:
        w = m.weighted or {}
        cx, cy = sx(x), sy(w["value"])
        parts.append(
            f'<line x1="{cx:.1f}" y1="{sy(w["low"]):.1f}" x2="{cx:.1f}" '
            f'y2="{sy(w["high"]):.1f}" stroke="#555"/>'
        )
        xe = getattr(m, key)  # the cost or latency interval, drawn too (open end: to the edge)
        x_lo = sx(xe["low"]) if xe.get("low") is not None else left
        x_hi = sx(xe["high"]) if xe.get("high") is not None else right
        parts.append(
            f'<line x1="{x_lo:.1f}" y1="{cy:.1f}" x2="{x_hi:.1f}" y2="{cy:.1f}" stroke="#555"/>'
        )
        fill = "#1f6feb" if m.pareto else "white"
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{fill}" stroke="#1f6feb"/>')
        parts.append(f'<text x="{cx + 8:.1f}" y="{cy - 6:.1f}">{html.escape(m.label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _checks(m: ModelResult) -> str:
    return "; ".join(f"{c.name}: {c.status} ({c.detail})" for c in m.checks) or "none"


def to_markdown(result: SelectionResult) -> str:
    tasks = list(result.tasks)
    lines = [
        f"# {result.name}",
        "",
        f"**Recommendation** ({result.confidence} confidence): {result.recommendation}",
        "",
        "## Hard constraints",
        "",
        "| model | eligible | checks |",
        "|---|---|---|",
    ]
    for m in result.models:
        lines.append(f"| {m.label} | {'yes' if m.eligible else 'no'} | {_checks(m)} |")
    lines += [
        "",
        "## Scores, cost and latency",
        "",
        "| model | "
        + " | ".join(f"{t} (w={result.tasks[t]:g})" for t in tasks)
        + " | weighted | cost / 1,000 items | latency p95 | Pareto |",
        "|---|" + "---|" * (len(tasks) + 4),
    ]
    for m in result.models:
        cells = [_pct(m.scores.get(t)) for t in tasks]
        lines.append(
            f"| {m.label} | " + " | ".join(cells) + f" | {_pct(m.weighted)} | "
            f"{_num(m.cost_per_1000_usd, ' USD')} | {_num(m.latency_p95_s, ' s')} | "
            f"{'yes' if m.pareto else ''} |"
        )
    if result.comparisons:
        lines += [
            "",
            "## Paired differences against the best eligible model",
            "",
            "| model | versus | weighted difference (points) |",
            "|---|---|---|",
        ]
        for c in result.comparisons:
            lines.append(f"| {c['model']} | {c['versus']} | {_pct(c['weighted_diff'])} |")
    lines += [
        "",
        "## Openness",
        "",
        "| model | licence | openness class | MOF |",
        "|---|---|---|---|",
    ]
    for m in result.models:
        lines.append(
            f"| {m.label} | {m.licence or 'missing'} | {m.openness or 'missing'} | "
            f"{m.mof or 'missing'} |"
        )
    lines += [
        "",
        "Intervals are 95%. The weighted score combines task scores with a normal "
        "approximation (tasks independent); differences are paired item by item per "
        "task. A missing measurement is shown as missing, never as zero.",
        "",
    ]
    return "\n".join(lines)


def to_html(result: SelectionResult) -> str:
    md = html.escape(to_markdown(result))
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(result.name)}</title>"
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
        "pre{white-space:pre-wrap;background:#f6f8fa;padding:1em}</style></head><body>"
        f"<h1>{html.escape(result.name)}</h1>"
        f"<p><strong>Recommendation</strong> ({html.escape(result.confidence)} confidence): "
        f"{html.escape(result.recommendation)}</p>"
        "<h2>Quality against cost (Pareto front filled)</h2>"
        f"{pareto_svg(result)}<h2>Details</h2><pre>{md}</pre></body></html>"
    )

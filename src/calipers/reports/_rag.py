"""The RAG stress report as one offline HTML file (plots inline) and as Markdown.

It reads a :class:`calipers.analysis.RagReport` and computes nothing new: forest plots of each
outcome's paired difference from the clean arm, and the context-fill curve with each level's
interval, the fitted hinge and the knee's interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from markupsafe import Markup, escape

from calipers._util.private import write_private_text
from calipers.analysis import RagReport
from calipers.reports._axis import diff_axis
from calipers.reports._html import _load
from calipers.reports._markdown import cell, table
from calipers.reports._svg import PlotRow, interval_svg
from calipers.types import Estimate

__all__ = [
    "OUTCOME_NAMES",
    "fill_curve_svg",
    "knee_text",
    "outcome_name",
    "outcomes_shown",
    "pct",
    "pts",
    "render_rag_html",
    "render_rag_markdown",
    "write_rag_report",
]

OUTCOME_NAMES = {
    "correct": "correct",
    "abstained": "abstained",
    "unsupported": "unsupported",
    "distractor_adopted": "distractor adopted",
    "counterfactual_followed": "counterfactual followed",
    "faithfulness": "faithfulness",
}
W, H, L, R, T, B = 760, 300, 60, 740, 20, 250


def pct(e: Estimate | None) -> str:
    """``42.0 [35.1, 49.2]`` (percent); ``n/a (n=0)`` for an estimate with no data."""
    if e is None:
        return "-"
    if e.is_empty:
        return "n/a (n=0)"
    return f"{100 * e.value:.1f} [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def pts(e: Estimate | None) -> str:
    """A paired difference in points, signed."""
    if e is None:
        return "-"
    if e.is_empty:
        return "n/a (n=0)"
    return f"{100 * e.value:+.1f} [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"


def outcome_name(report: RagReport, metric: str) -> str:
    """The column name; a judge's uncalibrated number says so."""
    name = OUTCOME_NAMES.get(metric, metric)
    judge = report.judge if metric == "faithfulness" else None
    return f"{name} (uncalibrated)" if judge is not None and not judge.get("calibrated") else name


def outcomes_shown(report: RagReport) -> list[str]:
    """The outcomes any arm of the report has, in report order."""
    seen = {m for r in [report.clean, *report.arms] for m in r.outcomes}
    return [m for m in OUTCOME_NAMES if m in seen]


def _sx(v: float) -> float:
    return L + v * (R - L)


def _sy(v: float) -> float:
    return B - v * (B - T)


def fill_curve_svg(curve: Any) -> Markup:
    """Each fill level's rate with its interval (x: realised share of the window, y: rate),
    the points joined, the knee as a dashed line and its interval as a band."""
    title = f"{OUTCOME_NAMES.get(curve.outcome, curve.outcome)} by context fill"
    parts = [
        f'<svg class="plot curve" viewBox="0 0 {W} {H}" width="{W}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line class="axis" x1="{L}" y1="{B}" x2="{R}" y2="{B}"/>',
        f'<line class="axis" x1="{L}" y1="{T}" x2="{L}" y2="{B}"/>',
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line class="axis" x1="{_sx(v):.1f}" y1="{B}" x2="{_sx(v):.1f}" y2="{B + 4}"/>'
        )
        parts.append(
            f'<text class="tick" x="{_sx(v):.1f}" y="{B + 16}" text-anchor="middle">'
            f"{100 * v:g}%</text>"
        )
        parts.append(
            f'<text class="tick" x="{L - 8}" y="{_sy(v) + 4:.1f}" '
            f'text-anchor="end">{100 * v:g}%</text>'
        )
    k = curve.knee
    if k is not None and not k.knee.is_empty:
        x0, x1 = _sx(k.knee.low), _sx(k.knee.high)
        parts.append(
            f'<rect class="band" x="{x0:.1f}" y="{T}" width="{max(x1 - x0, 1):.1f}" '
            f'height="{B - T}"><title>knee interval</title></rect>'
        )
        parts.append(
            f'<line class="zero" x1="{_sx(k.knee.value):.1f}" y1="{T}" '
            f'x2="{_sx(k.knee.value):.1f}" y2="{B}"/>'
        )
    pts = []
    for x, e in zip(curve.realised, curve.scores, strict=True):
        if e.is_empty:
            continue
        cx = _sx(x)
        parts.append(
            f'<line class="ci" x1="{cx:.1f}" y1="{_sy(e.low):.1f}" x2="{cx:.1f}" '
            f'y2="{_sy(e.high):.1f}"/>'
        )
        parts.append(
            f'<circle class="pt" cx="{cx:.1f}" cy="{_sy(e.value):.1f}" r="4.5">'
            f"<title>{100 * x:.1f}% fill: {escape(pct(e))}</title></circle>"
        )
        pts.append(f"{cx:.1f},{_sy(e.value):.1f}")
    if len(pts) > 1:
        parts.append(f'<polyline class="trend" fill="none" points="{" ".join(pts)}"/>')
    parts.append(
        f'<text class="tick" x="{(L + R) / 2}" y="{H - 8}" text-anchor="middle">'
        "share of the context window (realised)</text>"
    )
    return Markup("\n".join([*parts, "</svg>"]))


def _forests(report: RagReport) -> list[Markup]:
    out = []
    for m in outcomes_shown(report):
        rows = [
            PlotRow(
                r.label,
                f"n={c.n_paired}",
                c.diff,
                pts(c.diff),
                filled=c.p_adjusted is not None and c.p_adjusted < report.alpha,
            )
            for r in report.arms
            if (c := r.outcomes.get(m)) is not None and c.diff is not None
        ]
        if rows:
            axis = diff_axis([r.est for r in rows], points=True)
            out.append(
                interval_svg(
                    rows, axis, title=f"Δ {outcome_name(report, m)} vs clean (points)", zero=True
                )
            )
    return out


def knee_text(curve: Any) -> str:
    """The verdict of one outcome's fill curve in a sentence."""
    k = curve.knee
    name = OUTCOME_NAMES.get(curve.outcome, curve.outcome)
    if k is None:
        return f"{name}: no knee fitted ({curve.note})."
    return (
        f"{name}: {k.verdict} (knee {100 * k.knee.value:.0f}% "
        f"[{100 * k.knee.low:.0f}%, {100 * k.knee.high:.0f}%]; {k.test}, p={k.p_value:.3g})."
    )


def _rate_rows(report: RagReport, metrics: Sequence[str]) -> list[list[str]]:
    return [
        [
            r.label,
            str(r.n_items),
            *[pct(r.outcomes[m].score) if m in r.outcomes else "-" for m in metrics],
        ]
        for r in [report.clean, *report.arms]
    ]


def _diff_rows(report: RagReport, metrics: Sequence[str]) -> list[list[str]]:
    rows = []
    for r in report.arms:
        cells = []
        for m in metrics:
            c = r.outcomes.get(m)
            text = "-" if c is None or c.diff is None else pts(c.diff)
            if c is not None and c.p_adjusted is not None and c.p_adjusted < report.alpha:
                text += " *"
            cells.append(text)
        rows.append([r.label, *cells])
    return rows


def render_rag_markdown(report: RagReport) -> str:
    metrics = outcomes_shown(report)
    lines = [
        f"# RAG stress test {report.study or ''}".rstrip(),
        "",
        f"{cell(report.model)} on `{report.task}`.",
        "",
        "## Each outcome per arm, % [95% CI]",
        "",
    ]
    lines += table(
        ["arm", "n", *[outcome_name(report, m) for m in metrics]],
        _rate_rows(report, metrics),
        "l" + "r" * (len(metrics) + 1),
    )
    if report.arms:
        dm = [m for m in metrics if m in report.clean.outcomes]
        lines += [
            "",
            "## Paired difference from the clean arm, points [95% CI]",
            "",
            f"`*`: significant after Holm across arms (alpha {report.alpha}).",
            "",
        ]
        lines += table(
            ["arm", *["Δ " + outcome_name(report, m) for m in dm]],
            _diff_rows(report, dm),
            "l" + "r" * len(dm),
        )
    if report.fill:
        lines += ["", "## Context fill", ""]
        c0 = report.fill[0]
        lines += table(
            ["level", "realised", *[OUTCOME_NAMES.get(c.outcome, c.outcome) for c in report.fill]],
            [
                [f"{100 * lv:g}%", f"{100 * rl:.1f}%", *[pct(c.scores[i]) for c in report.fill]]
                for i, (lv, rl) in enumerate(zip(c0.levels, c0.realised, strict=True))
            ],
            "lrr" + "r" * (len(report.fill) - 1),
        )
        lines += [""] + [f"- {knee_text(c)}" for c in report.fill]
    lines += [""] + [f"> {n}" for n in report.notes]
    return "\n".join(lines).rstrip() + "\n"


def render_rag_html(report: RagReport) -> str:
    metrics = outcomes_shown(report)
    style = (
        _load("_style.css")
        + _load("_plots.css")
        + (
            ".curve .band{fill:currentColor;opacity:.12}.curve .trend{stroke:currentColor;"
            "stroke-width:1.5;opacity:.6}.curve .axis{stroke:currentColor;opacity:.5}"
            ".curve .tick{font-size:11px;fill:currentColor}"
        )
    )

    def html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"

    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f"<title>RAG stress test {escape(report.study or '')}</title>",
        f"<style>{style}</style></head><body><main>",
        f"<h1>RAG stress test {escape(report.study or '')}</h1>",
        f"<p>{escape(report.model)} on <code>{escape(report.task)}</code>.</p>",
        "<h2>Each outcome per arm, % [95% CI]</h2>",
        html_table(
            ["arm", "n", *[outcome_name(report, m) for m in metrics]], _rate_rows(report, metrics)
        ),
    ]
    if report.arms:
        dm = [m for m in metrics if m in report.clean.outcomes]
        parts += [
            "<h2>Paired difference from the clean arm, points [95% CI]</h2>",
            f"<p>*: significant after Holm across arms (alpha {report.alpha}); solid points in "
            "the plots.</p>",
            html_table(
                ["arm", *["Δ " + outcome_name(report, m) for m in dm]], _diff_rows(report, dm)
            ),
            *[str(svg) for svg in _forests(report)],
        ]
    for c in report.fill:
        parts += [
            f"<h2>Context fill: {escape(OUTCOME_NAMES.get(c.outcome, c.outcome))}</h2>",
            f"<p>{escape(knee_text(c))}</p>",
            str(fill_curve_svg(c)),
        ]
    parts += [f"<p class=note>{escape(n)}</p>" for n in report.notes]
    return "\n".join([*parts, "</main></body></html>"])


def write_rag_report(report: RagReport, path: Path, kind: Literal["html", "markdown"]) -> Path:
    text = render_rag_html(report) if kind == "html" else render_rag_markdown(report)
    write_private_text(Path(path), text)
    return Path(path)

"""Inline SVG plots for the reports: interval (forest) plots, stacked count bars, histograms.

Pure functions from numbers to markup; every piece of text goes through ``escape``. Colours
come from CSS classes (``ci``, ``pt``, ``seg-right``...) so the page's light and dark themes
apply. Every point is drawn with its interval; an estimate with no data is written
"n/a (n=0)" where its point would be, never drawn as 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from calipers.reports._axis import Axis
from calipers.types import Estimate

__all__ = ["Bin", "PlotRow", "Segment", "histogram_svg", "interval_svg", "stacked_svg"]

W, L, R, VALUE_X = 760, 220, 560, 572
ROW, TOP, AXIS_H = 36, 8, 34
LABEL_CHARS = 34


@dataclass(frozen=True, slots=True)
class PlotRow:
    """One row of an interval plot: ``label`` (bold), ``sub`` (small, below) and the estimate;
    ``text`` is written right of the plot; ``filled`` draws a solid point (else hollow)."""

    label: str
    sub: str
    est: Estimate
    text: str
    filled: bool = True


@dataclass(frozen=True, slots=True)
class Segment:
    kind: str  # right | wrong | error | unscored
    count: int


@dataclass(frozen=True, slots=True)
class Bin:
    lo: float
    hi: float
    count: int


def _f(v: float) -> str:
    return f"{v:.1f}"


def _short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _x(axis: Axis, v: float) -> float:
    return L + axis.frac(v) * (R - L)


def _axis_marks(axis: Axis, top: float, bottom: float) -> list[str]:
    out = []
    for t in axis.ticks:
        x = _f(_x(axis, t))
        out += [
            f'<line class="grid" x1="{x}" y1="{_f(top)}" x2="{x}" y2="{_f(bottom)}"/>',
            f'<line class="tickmark" x1="{x}" y1="{_f(bottom)}" x2="{x}" y2="{_f(bottom + 5)}"/>',
            f'<text class="tick" x="{x}" y="{_f(bottom + 18)}" text-anchor="middle">'
            f"{escape(axis.label(t))}</text>",
        ]
    out.append(f'<line class="axis" x1="{L}" y1="{_f(bottom)}" x2="{R}" y2="{_f(bottom)}"/>')
    return out


def _labels(row: PlotRow, y: float) -> list[str]:
    return [
        f'<text class="label" x="0" y="{_f(y - 2)}">{escape(_short(row.label))}</text>',
        f'<text class="sub" x="0" y="{_f(y + 11)}">{escape(_short(row.sub, 44))}</text>',
        f'<text class="value" x="{VALUE_X}" y="{_f(y + 4)}">{escape(row.text)}</text>',
    ]


def _interval(axis: Axis, row: PlotRow, y: float) -> list[str]:
    e = row.est
    if e.is_empty:
        return [f'<text class="na" x="{L + 6}" y="{_f(y + 4)}">n/a (n=0)</text>']
    lo, hi, pt = _x(axis, e.low), _x(axis, e.high), _x(axis, e.value)
    caps = [
        f'<line class="cap" x1="{_f(x)}" y1="{_f(y - 5)}" x2="{_f(x)}" y2="{_f(y + 5)}"/>'
        for x in (lo, hi)
    ]
    point = "pt" if row.filled else "pt hollow"
    return [
        f'<line class="ci" x1="{_f(lo)}" y1="{_f(y)}" x2="{_f(hi)}" y2="{_f(y)}"/>',
        *caps,
        f'<circle class="{point}" cx="{_f(pt)}" cy="{_f(y)}" r="4.5"/>',
    ]


def interval_svg(rows: Sequence[PlotRow], axis: Axis, *, title: str, zero: bool = False) -> Markup:
    """A forest plot: one row per estimate with its point and interval on ``axis``; with
    ``zero`` a line is drawn at 0 (for differences)."""
    bottom = TOP + ROW * len(rows)
    h = bottom + AXIS_H
    parts = [
        f'<svg class="plot forest" viewBox="0 0 {W} {h}" width="{W}" role="img" '
        f'aria-label="{escape(title)}" data-lo="{axis.lo:g}" data-hi="{axis.hi:g}">',
        f"<title>{escape(title)}</title>",
        *_axis_marks(axis, TOP, bottom),
    ]
    if zero:
        x0 = _f(_x(axis, 0.0))
        parts.append(f'<line class="zero" x1="{x0}" y1="{TOP - 4}" x2="{x0}" y2="{_f(bottom)}"/>')
    for i, row in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        tip = f"{row.label} · {row.sub}: {row.text}"
        parts += [
            f'<g class="row"><title>{escape(tip)}</title>',
            *_labels(row, y),
            *_interval(axis, row, y),
            "</g>",
        ]
    return Markup("\n".join([*parts, "</svg>"]))


def _segments(segs: Sequence[Segment], total: int, y: float) -> list[str]:
    out, x = [], float(L)
    for s in segs:
        if s.count == 0:
            continue
        w = (R - L) * s.count / total
        out.append(
            f'<rect class="seg-{s.kind}" x="{_f(x)}" y="{_f(y - 8)}" width="{_f(w)}" '
            f'height="16"><title>{s.kind}: {s.count} of {total}</title></rect>'
        )
        if w >= 22:
            out.append(
                f'<text class="segtext" x="{_f(x + w / 2)}" y="{_f(y + 4)}" '
                f'text-anchor="middle">{s.count}</text>'
            )
        x += w
    return out


def stacked_svg(rows: Sequence[tuple[str, str, Sequence[Segment], str]], *, title: str) -> Markup:
    """One bar per row, as long as the row's sample count: right, wrong, error and unscored
    counts side by side. Rows are ``(label, sub, segments, text)``."""
    h = TOP + ROW * len(rows) + 8
    parts = [
        f'<svg class="plot stacked" viewBox="0 0 {W} {h}" width="{W}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i, (label, sub, segs, text) in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        total = sum(s.count for s in segs)
        parts += ['<g class="row">', *_labels(PlotRow(label, sub, Estimate.empty(), text), y)]
        if total:
            parts += _segments(segs, total, y)
        else:
            parts.append(f'<text class="na" x="{L + 6}" y="{_f(y + 4)}">no samples</text>')
        parts.append("</g>")
    return Markup("\n".join([*parts, "</svg>"]))


HW, HH, HL, HR, HT, HB = 380, 140, 34, 300, 18, 118


def _bin_label(v: float) -> str:
    return f"{round(v, 6):g}"


def histogram_svg(bins: Sequence[Bin], errors: int, *, title: str) -> Markup:
    """Counts of per-item scores in ``bins`` (y from 0), with errored items as their own bar
    to the right, never mixed into the lowest bin."""
    top = max([b.count for b in bins] + [errors, 1])
    bw = (HR - HL) / max(len(bins), 1)
    parts = [
        f'<svg class="plot hist" viewBox="0 0 {HW} {HH}" width="{HW}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<line class="axis" x1="{HL}" y1="{HB}" x2="{HW - 6}" y2="{HB}"/>',
        f'<text class="tick" x="{HL - 4}" y="{HB}" text-anchor="end">0</text>',
        f'<text class="tick" x="{HL - 4}" y="{HT + 4}" text-anchor="end">{top}</text>',
    ]

    def bar(cls: str, x: float, w: float, count: int, tip: str) -> None:
        bh = (HB - HT) * count / top
        parts.append(
            f'<rect class="{cls}" x="{_f(x)}" y="{_f(HB - bh)}" width="{_f(w)}" '
            f'height="{_f(bh)}"><title>{escape(tip)}</title></rect>'
        )
        if count:
            parts.append(
                f'<text class="tick" x="{_f(x + w / 2)}" y="{_f(HB - bh - 3)}" '
                f'text-anchor="middle">{count}</text>'
            )

    for i, b in enumerate(bins):
        bar(
            "seg-right",
            HL + i * bw + 1,
            bw - 2,
            b.count,
            f"[{_bin_label(b.lo)}, {_bin_label(b.hi)}]: {b.count}",
        )
    bar("seg-error", HR + 28, 32, errors, f"errors: {errors}")
    lo, hi = (bins[0].lo, bins[-1].hi) if bins else (0.0, 1.0)
    for x, v in ((HL, lo), ((HL + HR) / 2, (lo + hi) / 2), (HR, hi)):
        parts.append(
            f'<text class="tick" x="{_f(x)}" y="{HB + 16}" text-anchor="middle">'
            f"{escape(_bin_label(v))}</text>"
        )
    parts.append(
        f'<text class="tick" x="{HR + 44}" y="{HB + 16}" text-anchor="middle">errors</text>'
    )
    return Markup("\n".join([*parts, "</svg>"]))

"""Inline-SVG charts for the dashboard: no JavaScript, no external files, every text escaped.

- :func:`forest_svg`: estimates with their intervals on an honest axis (the reports' forest
  plot, with the axis chosen for you).
- :func:`time_series_svg`: several series of estimates over time, each point with its interval
  drawn as a band, missing points as gaps (never as 0), and optional vertical alert markers.

Colours come from CSS classes (``s0``...``s5`` per series, ``band``, ``line``, ``pt``,
``alert-marker``), so the page's light and dark themes apply. Geometry constants are public so
tests (and readers) can check where a point lands.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup, escape

from calipers.reports import (
    Axis,
    PlotRow,
    diff_axis,
    interval_svg,
    nice_step,
    score_axis,
    unit_scale,
)
from calipers.types import Estimate

__all__ = [
    "PLOT_BOTTOM",
    "PLOT_LEFT",
    "PLOT_RIGHT",
    "PLOT_TOP",
    "WIDTH",
    "Marker",
    "PlotRow",
    "Rule",
    "Series",
    "TimePoint",
    "forest_svg",
    "plot_row",
    "time_series_svg",
    "y_of",
]

When = datetime | float

WIDTH, PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 760, 64, 740, 48, 248
AXIS_H, LEGEND_ROW, LEGEND_COLS, N_COLOURS = 40, 18, 4, 6
LABEL_Y, CHAR_W, BOLD_W = 30, 7.0, 7.6  # alert labels: one row above the plot
"""Text widths are estimated (no fonts on the server): CHAR_W and BOLD_W are a generous
average advance of an 11px character (DejaVu Sans, the widest common fallback, averages
about 0.62em), so an estimated box is never narrower than the drawn one."""
MAX_LABEL = 30  # characters of a marker's label; its full text is the marker's tooltip
_TIME_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
    1209600,
    2592000,
)


# -- forest plot ---------------------------------------------------------------------------------


def plot_row(label: str, sub: str, est: Estimate, *, percent: bool = True) -> PlotRow:
    """A forest-plot row whose right-hand text is the estimate, in percent on the 0–1 scale."""
    on_scale = percent and unit_scale([est])
    text = est.format(percent=on_scale)
    return PlotRow(label, sub if est.is_empty else f"{sub} · n={est.n}".lstrip(" ·"), est, text)


def forest_svg(
    rows: Sequence[PlotRow], *, title: str, differences: bool = False, points: bool = False
) -> Markup:
    """One row per estimate with its interval. Scores get the full 0–100% axis when every
    interval lies in [0, 1]; ``differences`` get an axis symmetric around 0 with a zero line,
    labelled in percentage points with ``points`` (differences of proportions)."""
    ests = [r.est for r in rows]
    axis = diff_axis(ests, points=points) if differences else score_axis(ests)
    return interval_svg(rows, axis, title=title, zero=differences)


# -- time series ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimePoint:
    """One estimate at time ``t`` (a UTC datetime or a plain number). An empty estimate
    (no data: NaN, n=0) is a gap in the series."""

    t: When
    est: Estimate


@dataclass(frozen=True, slots=True)
class Series:
    name: str
    points: Sequence[TimePoint]


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical line at ``t`` with a ``label``; ``css`` is its class (``alert-marker``)."""

    t: When
    label: str
    css: str = "alert-marker"


@dataclass(frozen=True, slots=True)
class Rule:
    """A horizontal reference line at ``y`` (e.g. 0, "no difference") with a ``label``."""

    y: float
    label: str


def _seconds(t: When) -> float:
    if isinstance(t, datetime):
        return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
    return float(t)


@dataclass(frozen=True, slots=True)
class _XScale:
    lo: float
    hi: float
    is_time: bool

    def x(self, t: When) -> float:
        return PLOT_LEFT + (_seconds(t) - self.lo) / (self.hi - self.lo) * (PLOT_RIGHT - PLOT_LEFT)


def _x_scale(
    series: Sequence[Series], markers: Sequence[Marker], x_range: tuple[When, When] | None
) -> _XScale:
    times = [p.t for s in series for p in s.points] + [m.t for m in markers]
    kinds = {isinstance(t, datetime) for t in [*times, *(x_range or ())]}
    if len(kinds) > 1:
        raise ValueError("time_series_svg: mix of datetimes and numbers on the time axis")
    is_time = kinds == {True}
    if x_range is not None:
        lo, hi = _seconds(x_range[0]), _seconds(x_range[1])
    elif times:
        lo, hi = min(map(_seconds, times)), max(map(_seconds, times))
    else:
        lo, hi = 0.0, 1.0
    if not hi > lo:
        lo, hi = lo - 1.0, hi + 1.0
    return _XScale(lo, hi, is_time)


def y_of(v: float, axis: Axis) -> float:
    """Where value ``v`` lands vertically on a chart with y ``axis``."""
    return PLOT_BOTTOM - axis.frac(v) * (PLOT_BOTTOM - PLOT_TOP)


def _f(v: float) -> str:
    return f"{v:.1f}"


def _time_label(s: float, step: float, first: bool, prev: float | None) -> str:
    d = datetime.fromtimestamp(s, UTC)
    if step >= 86400:
        return d.strftime("%Y-%m-%d")
    fmt = "%H:%M:%S" if step < 60 else "%H:%M"
    new_day = first or (prev is not None and datetime.fromtimestamp(prev, UTC).date() != d.date())
    return d.strftime(f"%m-%d {fmt}") if new_day else d.strftime(fmt)


def _x_ticks(scale: _XScale) -> list[tuple[float, str]]:
    span = scale.hi - scale.lo
    if scale.is_time:
        step = float(next((s for s in _TIME_STEPS if s >= span / 6), _TIME_STEPS[-1]))
    else:
        step = nice_step(span, 6)
    first = math.ceil(scale.lo / step - 1e-9) * step
    ticks, prev = [], None
    for i in range(int((scale.hi - first) / step + 1e-9) + 1):
        s = first + i * step
        label = _time_label(s, step, i == 0, prev) if scale.is_time else f"{round(s, 9):g}"
        ticks.append((s, label))
        prev = s
    return ticks


def _axes(scale: _XScale, axis: Axis, x_label: str | None = None) -> list[str]:
    out = []
    for v in axis.ticks:
        y = _f(y_of(v, axis))
        out += [
            f'<line class="grid" x1="{PLOT_LEFT}" y1="{y}" x2="{PLOT_RIGHT}" y2="{y}"/>',
            f'<text class="tick" x="{PLOT_LEFT - 6}" y="{_f(y_of(v, axis) + 4)}" '
            f'text-anchor="end">{escape(axis.label(v))}</text>',
        ]
    for s, label in _x_ticks(scale):
        x = scale.x(s)
        tx, anchor = _inside(x, CHAR_W * len(label))
        out += [
            f'<line class="tickmark" x1="{_f(x)}" y1="{PLOT_BOTTOM}" x2="{_f(x)}" '
            f'y2="{PLOT_BOTTOM + 5}"/>',
            f'<text class="tick" x="{_f(tx)}" y="{PLOT_BOTTOM + 18}" '
            f'text-anchor="{anchor}">{escape(label)}</text>',
        ]
    caption = x_label or ("time (UTC)" if scale.is_time else "x")
    out += [
        f'<line class="axis" x1="{PLOT_LEFT}" y1="{PLOT_BOTTOM}" x2="{PLOT_RIGHT}" '
        f'y2="{PLOT_BOTTOM}"/>',
        f'<text class="sub" x="{PLOT_RIGHT}" y="{PLOT_BOTTOM + 34}" text-anchor="end">'
        f"{caption}</text>",
    ]
    return out


def _present(p: TimePoint) -> bool:
    return not p.est.is_empty and math.isfinite(p.est.value)


def _runs(points: Sequence[TimePoint]) -> list[list[TimePoint]]:
    """Consecutive present points (sorted by time); an empty estimate breaks the run."""
    out: list[list[TimePoint]] = [[]]
    for p in sorted(points, key=lambda q: _seconds(q.t)):
        if _present(p):
            out[-1].append(p)
        elif out[-1]:
            out.append([])
    return [r for r in out if r]


def _point_text(p: TimePoint, axis: Axis) -> str:
    when = (
        datetime.fromtimestamp(_seconds(p.t), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if isinstance(p.t, datetime)
        else f"{p.t:g}"
    )
    return f"{when}: {p.est.format(percent=axis.unit == 'percent')} (n={p.est.n})"


def _band(run: list[TimePoint], scale: _XScale, axis: Axis) -> list[str]:
    """The interval band of a run of points; a lone point gets an error bar instead."""
    ok = [p for p in run if math.isfinite(p.est.low) and math.isfinite(p.est.high)]
    if len(ok) == 1 or (ok and len(run) == 1):
        p = ok[0]
        x = _f(scale.x(p.t))
        return [
            f'<line class="ci" x1="{x}" y1="{_f(y_of(p.est.low, axis))}" x2="{x}" '
            f'y2="{_f(y_of(p.est.high, axis))}"/>'
        ]
    if len(ok) < 2:
        return []
    upper = [f"{_f(scale.x(p.t))},{_f(y_of(p.est.high, axis))}" for p in ok]
    lower = [f"{_f(scale.x(p.t))},{_f(y_of(p.est.low, axis))}" for p in reversed(ok)]
    return [f'<polygon class="band" points="{" ".join(upper + lower)}"/>']


def _series(i: int, s: Series, scale: _XScale, axis: Axis) -> list[str]:
    out = [
        f'<g class="series s{i % N_COLOURS}" data-series="{escape(s.name)}">',
        f"<title>{escape(s.name)}</title>",
    ]
    for run in _runs(s.points):
        out += _band(run, scale, axis)
        if len(run) > 1:
            pts = " ".join(f"{_f(scale.x(p.t))},{_f(y_of(p.est.value, axis))}" for p in run)
            out.append(f'<polyline class="line" points="{pts}"/>')
        for p in run:
            out.append(
                f'<circle class="pt" cx="{_f(scale.x(p.t))}" '
                f'cy="{_f(y_of(p.est.value, axis))}" r="3.5">'
                f"<title>{escape(s.name)} · {escape(_point_text(p, axis))}</title>"
                "</circle>"
            )
    out.append("</g>")
    return out


def _inside(x: float, width: float) -> tuple[float, str]:
    """``(x, text-anchor)`` for a label of ``width`` centred on ``x``, moved to stay inside
    the viewBox: anchored at its start or end where centring would cross an edge."""
    if x - width / 2 < 2:
        return max(x - 4, 2.0), "start"
    if x + width / 2 > WIDTH - 2:
        return min(x + 4, WIDTH - 2.0), "end"
    return x, "middle"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _label_places(
    xs: Sequence[float], labels: Sequence[str]
) -> list[tuple[float, float, float] | None]:
    """Where each marker's label goes, ``(x, left, right)``: in one row above the plot,
    starting right of its line (ending left of it where it would leave the viewBox),
    never outside the viewBox and never over another label; None when it would overlap
    the previous one (the label is then only the line's tooltip)."""
    end = -math.inf
    out: list[tuple[float, float, float] | None] = [None] * len(xs)
    for i in sorted(range(len(xs)), key=lambda j: xs[j]):
        w = BOLD_W * len(labels[i])
        lo = xs[i] + 4 if xs[i] + 4 + w <= WIDTH - 2 else xs[i] - 4 - w
        lo = min(max(lo, 2.0), WIDTH - 2 - w)
        if lo >= end + 8:
            out[i] = (lo, lo, lo + w)
            end = lo + w
    return out


def _markers(markers: Sequence[Marker], scale: _XScale) -> list[str]:
    xs = [scale.x(m.t) for m in markers]
    shown = [_short(m.label, MAX_LABEL) for m in markers]
    places = _label_places(xs, shown)
    out = []
    for m, x, text, place in zip(markers, xs, shown, places, strict=True):
        out += [
            f'<g class="{escape(m.css)}" data-x="{_f(x)}"><title>{escape(m.label)}</title>',
            f'<line class="marker-line" x1="{_f(x)}" y1="{_f(PLOT_TOP - 6)}" x2="{_f(x)}" '
            f'y2="{PLOT_BOTTOM}"/>',
        ]
        if place is not None:
            out.append(
                f'<text class="marker-label" x="{_f(place[0])}" y="{LABEL_Y}" '
                f'text-anchor="start">{escape(text)}</text>'
            )
        out.append("</g>")
    return out


def _rules(rules: Sequence[Rule], axis: Axis) -> list[str]:
    out = []
    for r in rules:
        if not axis.lo <= r.y <= axis.hi:
            continue
        y = y_of(r.y, axis)
        out += [
            f'<g class="rule"><title>{escape(r.label)}</title>',
            f'<line class="rule-line" x1="{PLOT_LEFT}" y1="{_f(y)}" x2="{PLOT_RIGHT}" '
            f'y2="{_f(y)}"/>',
            f'<text class="sub" x="{PLOT_RIGHT - 4}" y="{_f(y - 4)}" text-anchor="end">'
            f"{escape(r.label)}</text></g>",
        ]
    return out


def _legend(series: Sequence[Series], top: float) -> list[str]:
    """A key per series in up to LEGEND_COLS columns as wide as the plot allows (one
    series: the whole width), each name shortened to fit its column."""
    out = []
    cols = max(1, min(len(series), LEGEND_COLS))
    col_w = (PLOT_RIGHT - PLOT_LEFT) / cols
    fits = max(4, int((col_w - 22) / CHAR_W))
    for i, s in enumerate(series):
        x = PLOT_LEFT + (i % cols) * col_w
        y = top + (i // cols) * LEGEND_ROW
        out += [
            f'<g class="key s{i % N_COLOURS}"><title>{escape(s.name)}</title>',
            f'<rect class="swatch" x="{_f(x)}" y="{_f(y - 9)}" width="10" height="10"/>',
            f'<text class="sub" x="{_f(x + 14)}" y="{_f(y)}">{escape(_short(s.name, fits))}'
            "</text></g>",
        ]
    return out


def time_series_svg(
    series: Sequence[Series],
    *,
    title: str,
    markers: Sequence[Marker] = (),
    y_axis: Axis | None = None,
    x_range: tuple[When, When] | None = None,
    rules: Sequence[Rule] = (),
    x_label: str | None = None,
) -> Markup:
    """Each series as points joined by a line over its interval band; x is time (datetimes,
    labelled in UTC, or plain numbers), y the estimates on ``y_axis`` (default: the honest
    score axis of every estimate, 0–100% for proportions). Empty estimates are gaps. The x
    range covers every point and marker unless ``x_range`` is given. ``rules`` are horizontal
    reference lines (drawn when inside the y axis); ``x_label`` names the x axis."""
    scale = _x_scale(series, markers, x_range)
    ests = [p.est for s in series for p in s.points if _present(p)]
    axis = y_axis or score_axis(ests)
    rows = math.ceil(len(series) / LEGEND_COLS)
    height = PLOT_BOTTOM + AXIS_H + rows * LEGEND_ROW + 6  # room for descenders
    parts = [
        f'<svg class="plot timeseries" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
        f'role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        *_axes(scale, axis, x_label),
    ]
    if not ests:
        parts.append(
            f'<text class="na" x="{(PLOT_LEFT + PLOT_RIGHT) / 2:g}" '
            f'y="{(PLOT_TOP + PLOT_BOTTOM) / 2:g}" text-anchor="middle">no data</text>'
        )
    for i, s in enumerate(series):
        parts += _series(i, s, scale, axis)
    parts += _rules(rules, axis)  # over the data, so their labels stay readable
    parts += _markers(markers, scale)
    parts += _legend(series, PLOT_BOTTOM + AXIS_H + 8)
    return Markup("\n".join([*parts, "</svg>"]))

"""Inline-SVG charts: well-formed XML, marks where the arithmetic says, gaps never drawn as 0,
labels escaped. Expected coordinates are computed here from the chart's documented geometry
(plot box PLOT_LEFT..PLOT_RIGHT by PLOT_TOP..PLOT_BOTTOM, linear axes)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest

from calipers.types import Estimate
from calipers.web._charts import (
    MAX_LABEL,
    PLOT_BOTTOM,
    PLOT_LEFT,
    PLOT_RIGHT,
    PLOT_TOP,
    WIDTH,
    Marker,
    PlotRow,
    Rule,
    Series,
    TimePoint,
    forest_svg,
    plot_row,
    time_series_svg,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
EVIL = '<b>x</b> & "q" <script>alert(1)</script>'


def est(v: float, half: float = 0.1, n: int = 50) -> Estimate:
    return Estimate(v, v - half, v + half, n, "wilson")


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def circles(root: ET.Element) -> list[tuple[float, float]]:
    return [(float(c.get("cx", "nan")), float(c.get("cy", "nan"))) for c in root.iter("circle")]


def flat(pairs: list[tuple[float, ...]] | list[tuple[float, float]]) -> list[float]:
    """Coordinate pairs as one flat list (pytest.approx does not compare nested ones)."""
    return [v for pair in pairs for v in pair]


def px_x(frac: float) -> float:
    return PLOT_LEFT + frac * (PLOT_RIGHT - PLOT_LEFT)


def px_y(frac: float) -> float:
    return PLOT_BOTTOM - frac * (PLOT_BOTTOM - PLOT_TOP)


def test_points_land_on_the_time_and_percent_axes() -> None:
    pts = [TimePoint(T0 + timedelta(hours=h), est(v)) for h, v in ((0, 0.2), (1, 0.5), (2, 0.8))]
    root = parse(time_series_svg([Series("acc", pts)], title="t"))
    # x: 0, 1, 2 hours over a 2-hour range; y: proportions on the full 0–100% axis
    want = [(px_x(0.0), px_y(0.2)), (px_x(0.5), px_y(0.5)), (px_x(1.0), px_y(0.8))]
    assert flat(circles(root)) == pytest.approx(flat(want), abs=0.06)
    assert [p for p in ET.tostring(root, encoding="unicode").split() if "points=" in p]
    ticks = [t.text for t in root.iter("text") if t.get("class") == "tick"]
    assert {"0%", "50%", "100%"} <= set(ticks)
    # a 2-hour span is ticked every 30 minutes (the first tick with its date)
    assert [t for t in ticks if t and ":" in t] == [
        "05-01 12:00",
        "12:30",
        "13:00",
        "13:30",
        "14:00",
    ]


def test_band_covers_each_interval() -> None:
    pts = [
        TimePoint(float(i), Estimate(v, lo, hi, 10, "wilson"))
        for i, (v, lo, hi) in enumerate([(0.5, 0.3, 0.7), (0.6, 0.4, 0.9)])
    ]
    root = parse(time_series_svg([Series("s", pts)], title="t", x_range=(0.0, 1.0)))
    (band,) = [p for p in root.iter("polygon") if p.get("class") == "band"]
    xy = [tuple(map(float, v.split(","))) for v in band.get("points", "").split()]
    want = [(px_x(0), px_y(0.7)), (px_x(1), px_y(0.9)), (px_x(1), px_y(0.4)), (px_x(0), px_y(0.3))]
    assert flat(xy) == pytest.approx(flat(want), abs=0.06)


def test_missing_points_are_gaps_not_zeros() -> None:
    vals = [0.4, 0.5, None, 0.7, 0.6]
    pts = [
        TimePoint(float(i), Estimate.empty() if v is None else est(v)) for i, v in enumerate(vals)
    ]
    root = parse(time_series_svg([Series("s", pts)], title="t"))
    got = circles(root)
    assert len(got) == 4
    assert px_x(2 / 4) not in [round(x, 1) for x, _ in got]
    assert all(y < px_y(0.0) - 1 for _, y in got)  # nothing drawn at 0
    lines = [p for p in root.iter("polyline") if p.get("class") == "line"]
    assert len(lines) == 2  # the gap splits the line in two


def test_a_lone_point_gets_an_error_bar() -> None:
    pts = [TimePoint(0.0, est(0.3)), TimePoint(1.0, Estimate.empty()), TimePoint(2.0, est(0.6))]
    root = parse(time_series_svg([Series("s", pts)], title="t"))
    bars = [ln for ln in root.iter("line") if ln.get("class") == "ci"]
    assert len(bars) == 2
    assert sorted(float(b.get("y1", "0")) for b in bars) == pytest.approx(
        sorted([px_y(0.2), px_y(0.5)]), abs=0.06
    )


def test_alert_markers_are_placed_labelled_and_escaped() -> None:
    pts = [TimePoint(T0 + timedelta(hours=h), est(0.5)) for h in range(5)]
    markers = [Marker(T0 + timedelta(hours=3), EVIL)]
    svg = time_series_svg([Series(EVIL, pts)], title=EVIL, markers=markers)
    assert "<b>" not in svg and "<script>" not in svg
    root = parse(svg)
    (g,) = [g for g in root.iter("g") if g.get("class") == "alert-marker"]
    (line,) = list(g.iter("line"))
    assert float(line.get("x1", "0")) == pytest.approx(px_x(3 / 4), abs=0.06)
    # the text, decoded, not markup; shortened to MAX_LABEL with the whole in the tooltip
    assert [t.text for t in g.iter("text")] == [EVIL[: MAX_LABEL - 1] + "…"]
    assert g.findtext("title") == EVIL
    assert root.findtext("title") == EVIL
    assert any(g.get("data-series") == EVIL for g in root.iter("g"))


def test_a_marker_outside_the_points_widens_the_range_and_css_is_kept() -> None:
    pts = [TimePoint(0.0, est(0.5)), TimePoint(1.0, est(0.5))]
    root = parse(
        time_series_svg(
            [Series("s", pts)], title="t", markers=[Marker(3.0, "late", css="alert-marker severe")]
        )
    )
    assert circles(root)[1][0] == pytest.approx(px_x(1 / 3), abs=0.06)
    assert [g.get("class") for g in root.iter("g") if "alert" in (g.get("class") or "")] == [
        "alert-marker severe"
    ]


def test_several_series_raw_axis_and_legend() -> None:
    a = Series(
        "latency p50",
        [
            TimePoint(float(i), Estimate(v, v - 1, v + 1, 9, "bootstrap"))
            for i, v in enumerate((10.0, 12.0, 14.0))
        ],
    )
    b = Series(
        "latency p90",
        [
            TimePoint(float(i), Estimate(v, v - 1, v + 1, 9, "bootstrap"))
            for i, v in enumerate((20.0, 22.0, 30.0))
        ],
    )
    root = parse(time_series_svg([a, b], title="t"))
    groups = [g for g in root.iter("g") if (g.get("class") or "").startswith("series")]
    assert [g.get("class") for g in groups] == ["series s0", "series s1"]
    # raw values: the axis includes 0 (every value is within 3 spans of it)
    ticks = [t.text for t in root.iter("text") if t.get("class") == "tick"]
    assert "0" in ticks
    keys = [t.text for t in root.iter("text") if t.text in ("latency p50", "latency p90")]
    assert keys == ["latency p50", "latency p90"]


def test_no_data_says_so_and_mixed_time_kinds_are_refused() -> None:
    root = parse(time_series_svg([Series("s", [TimePoint(0.0, Estimate.empty())])], title="t"))
    assert "no data" in [t.text for t in root.iter("text")]
    assert not circles(root)
    with pytest.raises(ValueError, match="mix"):
        time_series_svg(
            [Series("s", [TimePoint(0.0, est(0.1)), TimePoint(T0, est(0.1))])], title="t"
        )


def test_forest_plot_rows_on_the_full_percent_axis() -> None:
    rows = [
        plot_row("alpha", "acc", Estimate(0.6, 0.4, 0.78, 20, "wilson")),
        plot_row(EVIL, "acc", Estimate(0.9, 0.7, 0.97, 20, "wilson")),
        plot_row("none", "acc", Estimate.empty()),
    ]
    svg = forest_svg(rows, title="scores")
    assert "<b>" not in svg
    root = parse(svg)
    assert root.get("data-lo") == "0" and root.get("data-hi") == "1"
    pts = circles(root)
    assert len(pts) == 2  # the empty estimate is written "n/a (n=0)", not drawn
    assert "n/a (n=0)" in [t.text for t in root.iter("text")]
    assert rows[0].text == "60.0% [40.0, 78.0]"
    assert EVIL[:33] + "…" in [t.text for t in root.iter("text")]  # long labels are cut


def test_forest_plot_of_differences_is_symmetric_with_a_zero_line() -> None:
    rows = [PlotRow("b − a", "acc", Estimate(0.3, 0.06, 0.51, 30, "score"), "+30")]
    root = parse(forest_svg(rows, title="d", differences=True, points=True))
    lo, hi = float(root.get("data-lo", "nan")), float(root.get("data-hi", "nan"))
    assert lo == -hi and hi >= 0.51
    assert [ln for ln in root.iter("line") if ln.get("class") == "zero"]
    assert not math.isnan(lo)


def test_close_markers_get_one_row_of_labels_that_never_overlap_or_leave_the_chart() -> None:
    """Five markers close together: the first gets its label, the others only their
    tooltips (a label never covers another one, and all sit above the plot)."""
    pts = [TimePoint(float(i), est(0.5)) for i in range(10)]
    labels = [f"alert number {i}" for i in range(5)]
    markers = [Marker(5.0 + 0.1 * i, label) for i, label in enumerate(labels)]
    root = parse(time_series_svg([Series("s", pts)], title="t", markers=markers))
    groups = [g for g in root.iter("g") if g.get("class") == "alert-marker"]
    assert [g.findtext("title") for g in groups] == labels
    texts = [t for g in groups for t in g.iter("text")]
    assert [t.text for t in texts] == ["alert number 0"]
    assert all(float(t.get("y", "0")) < PLOT_TOP - 6 for t in texts)  # above the marker lines


@pytest.mark.parametrize("where", [0.0, 0.02, 0.5, 0.55, 0.98, 1.0])
def test_a_long_marker_label_stays_inside_the_viewbox(where: float) -> None:
    """Wherever the marker is, its label (estimated at BOLD_W per character, generous for
    11px bold) starts and ends inside the 0..WIDTH viewBox."""
    from calipers.web._charts import BOLD_W

    pts = [TimePoint(float(i), est(0.5)) for i in range(11)]
    label = "drift: prompt_length, language, topic, embedding, response_length"
    root = parse(
        time_series_svg([Series("s", pts)], title="t", markers=[Marker(10 * where, label)])
    )
    (text,) = [t for t in root.iter("text") if t.get("class") == "marker-label"]
    x, n = float(text.get("x", "nan")), len(text.text or "")
    assert text.get("text-anchor") == "start" and n <= MAX_LABEL
    assert x >= 0 and x + BOLD_W * n <= WIDTH


def test_rules_sit_at_their_value_and_x_label_names_the_axis() -> None:
    from calipers.reports._axis import Axis

    axis = Axis(-1.0, 1.0, (-1.0, 0.0, 1.0), "raw", "")
    svg = time_series_svg(
        [Series("d", [TimePoint(n, est(0.2)) for n in (1, 2, 3)])],
        title="t",
        y_axis=axis,
        x_label="observations",
        rules=[Rule(0.0, "no difference"), Rule(5.0, "off the axis")],
    )
    root = parse(svg)
    lines = [e for e in root.iter() if e.get("class") == "rule-line"]
    assert len(lines) == 1  # the rule outside the axis is not drawn
    assert float(lines[0].get("y1", "nan")) == pytest.approx(px_y(0.5), abs=0.06)
    assert "no difference" in svg and "off the axis" not in svg
    assert ">observations</text>" in svg and ">x</text>" not in svg


def test_legend_names_fit_their_column_and_a_lone_series_gets_the_width() -> None:
    name = "llm_judge:helpfulness: candidate − baseline"  # 43 characters
    pts = [TimePoint(float(i), est(0.5)) for i in range(3)]
    one = parse(time_series_svg([Series(name, pts)], title="t"))
    assert [
        t.text
        for g in one.iter("g")
        if g.get("class", "").startswith("key")
        for t in g.iter("text")
    ] == [name]
    many = parse(time_series_svg([Series(name + str(i), pts) for i in range(5)], title="t"))
    keys = [g for g in many.iter("g") if g.get("class", "").startswith("key")]
    from calipers.web._charts import CHAR_W, LEGEND_COLS

    col_w = (PLOT_RIGHT - PLOT_LEFT) / LEGEND_COLS
    for g in keys:  # shortened to fit its column, the whole name in the tooltip
        (text,) = g.iter("text")
        assert 14 + CHAR_W * len(text.text or "") <= col_w
        title = g.findtext("title")
        assert title is not None and title.startswith(name)

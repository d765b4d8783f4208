"""The dashboard in headless Chromium (Debian's /usr/bin/chromium through Playwright; no
browser is downloaded): pages load without console errors, charts render with the expected
marks, a drift injected into the last hour of logged traffic shows as a banner and alert
markers (and calm windows show none), and a model's script-and-image answer is shown as text
and never runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from calipers.web._charts import PLOT_LEFT, PLOT_RIGHT, WIDTH
from tests._servers import ServerThread
from tests.web.conftest import ALPHA_RIGHT, PAYLOAD, Seeded
from tests.web.traffic import CALM, DRIFT

pytestmark = pytest.mark.slow  # a real browser


class Page:
    """A fresh page that records console errors, page errors and dialogs."""

    def __init__(self, browser: Any, base: str) -> None:
        self.page = browser.new_page(viewport={"width": 1200, "height": 900})
        self.base = base
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("dialog", self._dialog)

    def _console(self, m: Any) -> None:
        if m.type in ("error", "warning"):
            self.problems.append(f"console {m.type}: {m.text}")

    def _dialog(self, d: Any) -> None:
        self.problems.append(f"dialog: {d.message}")
        d.dismiss()

    def open(self, path: str) -> Any:
        response = self.page.goto(self.base + path, wait_until="load")
        assert response is not None and response.status == 200, path
        return self.page

    def marks(self, selector: str) -> list[dict[str, float]]:
        """Bounding boxes of the elements matching ``selector``, as laid out."""
        boxes: list[dict[str, float]] = self.page.eval_on_selector_all(
            selector,
            "els => els.map(e => { const r = e.getBoundingClientRect(); "
            "return {w: r.width, h: r.height, x: r.x, y: r.y}; })",
        )
        return boxes


@pytest.fixture
def page(served: ServerThread, browser: Any) -> Iterator[Page]:  # the store first: asyncio.run
    p = Page(browser, served.url)
    yield p
    p.page.close()
    assert p.problems == []


def test_run_page_draws_its_charts(page: Page, seeded: Seeded) -> None:
    pg = page.open(f"/runs/{seeded.alpha}")
    charts = page.marks("figure.chart svg")
    assert len(charts) == 2 and all(c["w"] > 300 and c["h"] > 40 for c in charts)
    # one point for the task, one per category
    assert len(page.marks("figure.chart svg >> nth=0 >> circle.pt")) == 1
    assert len(page.marks("figure.chart svg >> nth=1 >> circle.pt")) == 3
    point = page.marks("figure.chart svg >> nth=0 >> circle.pt")[0]
    chart = charts[0]
    # the point sits at 60% of the 0–100% axis, which spans L..R of the 760-wide viewBox
    from calipers.reports._svg import L, R, W

    frac = (point["x"] + point["w"] / 2 - chart["x"]) / chart["w"] * W
    assert frac == pytest.approx(L + len(ALPHA_RIGHT) / 30 * (R - L), abs=3)
    assert pg.title().startswith("Run ")


def test_compare_and_leaderboard_charts(page: Page, seeded: Seeded) -> None:
    page.open(f"/compare?run={seeded.alpha}&run={seeded.beta}")
    assert len(page.marks("figure.chart svg circle.pt")) == 1
    assert page.marks("figure.chart svg line.zero")[0]["h"] > 10
    page.open("/leaderboard")
    boxes = page.marks("section.board svg.forest")
    assert len(boxes) == 1 and boxes[0]["w"] > 300
    assert len(page.marks("section.board svg.forest circle.pt")) == 3


def test_monitor_page_with_drift_draws_charts_banner_and_markers(page: Page) -> None:
    pg = page.open(f"/monitor?{DRIFT}")
    charts = page.marks("figure.chart svg.timeseries")
    assert len(charts) == 5 and all(c["w"] > 300 and c["h"] > 100 for c in charts)
    # two arms (baseline, candidate) x three windows, per chart
    assert len(page.marks("figure.chart svg.timeseries circle.pt")) == 5 * 2 * 3
    assert all(b["w"] > 0 for b in page.marks("figure.chart svg.timeseries polygon.band"))
    banner = pg.locator(".drift-alert")
    assert banner.count() == 1 and banner.is_visible()
    assert "prompt_length" in banner.inner_text()
    markers = page.marks("g.alert-marker line")
    assert len(markers) == 5 and all(m["h"] > 50 for m in markers)
    # the marker sits in the middle of the last of three windows: 5/6 across the plot
    chart, line = charts[0], markers[0]
    frac = (line["x"] - chart["x"]) / chart["w"] * WIDTH
    assert frac == pytest.approx(PLOT_LEFT + 5 / 6 * (PLOT_RIGHT - PLOT_LEFT), abs=3)
    assert pg.evaluate("typeof window.__xss") == "undefined"
    assert pg.locator("td.prompt").filter(has_text="<script>").count() == 3


def test_monitor_page_without_drift_shows_no_alert(page: Page) -> None:
    pg = page.open(f"/monitor?{CALM}")
    assert len(page.marks("figure.chart svg.timeseries")) == 5
    assert page.marks("figure.chart svg.timeseries circle.pt")
    assert pg.locator(".drift-alert").count() == 0 and page.marks("g.alert-marker") == []
    assert pg.locator(".no-drift").is_visible()


def test_ab_page_shows_the_decision(page: Page) -> None:
    pg = page.open("/ab")
    badge = pg.locator("p.decision")
    assert badge.count() == 1 and badge.is_visible() and badge.bounding_box()["width"] > 50
    assert pg.locator("table.guardrails tr.guardrail").count() == 5


def test_model_output_never_runs(page: Page, seeded: Seeded) -> None:
    for path in (f"/runs/{seeded.xss}?show=failures", f"/runs/{seeded.xss}/report"):
        pg = page.open(path)
        for d in pg.locator("details").all():
            d.evaluate("e => e.open = true")
        assert pg.evaluate("typeof window.__xss") == "undefined"
        assert pg.locator("img").count() == 0 and pg.locator("script").count() == 0
    pg = page.open(f"/runs/{seeded.xss}?show=failures")
    pg.locator("details.sample >> nth=0").evaluate("e => e.open = true")
    assert pg.locator("pre.response").first.inner_text() == PAYLOAD


def test_navigation_reaches_every_section(page: Page) -> None:
    pg = page.open("/runs")
    for label, path in (
        ("Compare", "/compare"),
        ("Leaderboard", "/leaderboard"),
        ("A/B", "/ab"),
        ("Monitor", "/monitor"),
        ("Runs", "/runs"),
    ):
        pg.locator("nav.top").get_by_role("link", name=label, exact=True).click()
        pg.wait_for_url(page.base + path)
        assert pg.locator("nav.top a.active").inner_text() == label
    assert "Not available yet" not in page.open("/ab").content()

"""Layout in a real browser (Debian's Chromium through Playwright; no browser is downloaded):
on every page, with data that stresses it (calls that take minutes, drift from the third
hour of a day on, canary traffic with three series, an A/B with no interval yet and one whose
guardrail fails), nothing overflows or is clipped: every table cell's content fits the cell
and every table its container, every SVG text lies inside its viewBox and the drawn SVG, and
no two texts of a chart overlap. Plus the token's cookie in a real browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from calipers.web._charts import PLOT_TOP
from tests.web.layout_data import (
    AB_EMPTY,
    AB_HARM,
    LONG_NAME,
    MONITOR_CANARY,
    MONITOR_DRIFT,
    LayoutStore,
    build_layout_store,
)
from tests.web.test_browser import Page

pytestmark = pytest.mark.slow  # a real browser

LAYOUT_JS = """() => {
  const out = [];
  const r = b => `[${Math.round(b.left)}..${Math.round(b.right)} x ${Math.round(b.top)}..` +
    `${Math.round(b.bottom)}]`;
  const what = e => (e.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50);
  for (const t of document.querySelectorAll("main table")) {
    const box = t.parentElement.getBoundingClientRect();
    const tb = t.getBoundingClientRect();
    if (tb.left < box.left - 1 || tb.right > box.right + 1)
      out.push(`table.${t.className} ${r(tb)} is wider than its container ${r(box)}`);
    for (const c of t.querySelectorAll("td, th")) {
      if (c.scrollWidth > c.clientWidth + 1)
        out.push(`cell content overflows its cell: "${what(c)}"`);
      for (const k of c.children) {
        const kb = k.getBoundingClientRect(), cb = c.getBoundingClientRect();
        if (kb.width && (kb.left < cb.left - 1 || kb.right > cb.right + 1))
          out.push(`"${what(k)}" ${r(kb)} sticks out of its cell ${r(cb)}`);
      }
    }
  }
  for (const s of document.querySelectorAll("main svg")) {
    const vb = s.viewBox.baseVal, sb = s.getBoundingClientRect();
    const texts = [...s.querySelectorAll("text")].filter(t => t.getBBox().width > 0);
    const boxes = texts.map(t => t.getBBox());
    texts.forEach((t, i) => {
      const b = boxes[i];
      if (vb && vb.width && (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 ||
          b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5))
        out.push(`svg text "${what(t)}" (${Math.round(b.x)}, ${Math.round(b.y)}, ` +
                 `${Math.round(b.width)} x ${Math.round(b.height)}) leaves the viewBox ` +
                 `${vb.width} x ${vb.height}`);
      const cb = t.getBoundingClientRect();
      if (cb.left < sb.left - 1 || cb.right > sb.right + 1 || cb.top < sb.top - 1 ||
          cb.bottom > sb.bottom + 1)
        out.push(`svg text "${what(t)}" ${r(cb)} is clipped by its svg ${r(sb)}`);
    });
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i], b = boxes[j];
        const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
        const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
        if (w > 1 && h > 1)
          out.push(`svg texts overlap: "${what(texts[i])}" and "${what(texts[j])}"`);
      }
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1)
    out.push(`the page scrolls sideways: ${page.scrollWidth} > ${page.clientWidth}`);
  return out;
}"""


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> LayoutStore:
    return build_layout_store(tmp_path_factory.mktemp("layout"))


@pytest.fixture(scope="module")
def base(layout: LayoutStore) -> Iterator[str]:
    from calipers.web import create_app
    from tests._servers import ServerThread

    server = ServerThread(create_app(layout.url), graceful_s=5).start()
    yield server.url
    server.stop()


@pytest.fixture
def page(base: str, browser: Any) -> Iterator[Page]:  # the store first: asyncio.run
    p = Page(browser, base)
    yield p
    p.page.close()
    assert p.problems == []


def layout_problems(page: Page, path: str) -> list[str]:
    """Open ``path`` and list what overflows or is clipped (see LAYOUT_JS)."""
    pg = page.open(path)
    for d in pg.locator("details").all():
        d.evaluate("e => e.open = true")
    problems: list[str] = pg.evaluate(LAYOUT_JS)
    return problems


def test_run_page_fits(page: Page, layout: LayoutStore) -> None:
    """Latencies of minutes, a long model name: the scores table fits, and the mean-latency
    cell wraps its method rather than spilling out of the table."""
    assert layout_problems(page, f"/runs/{layout.slow_run}") == []
    cell = page.page.locator("table.scores td.latency").first
    assert " s" in cell.inner_text() and "bootstrap" in cell.inner_text()
    assert LONG_NAME in page.page.locator("h1").inner_text()


def test_the_full_report_fits(page: Page, layout: LayoutStore) -> None:
    """The self-contained HTML report (what `calipers run` writes) has the same summary
    table: with minutes-long latencies it fits the page too."""
    assert layout_problems(page, f"/runs/{layout.slow_run}/report") == []


def test_sample_summaries_keep_their_spaces(page: Page, layout: LayoutStore) -> None:
    pg = page.open(f"/runs/{layout.slow_run}?show=all")
    first = pg.locator("details.sample summary").first.inner_text()
    assert "exact_match=0 · answered" in first, first


def test_runs_list_fits(page: Page) -> None:
    assert layout_problems(page, "/runs") == []


def test_monitor_with_drift_from_near_the_left_edge_fits(page: Page) -> None:
    assert layout_problems(page, f"/monitor?{MONITOR_DRIFT}") == []
    labels = page.marks("figure.chart[data-metric=volume] g.alert-marker text.marker-label")
    lines = page.marks("figure.chart[data-metric=volume] g.alert-marker line")
    [chart] = page.marks("figure.chart[data-metric=volume] svg.timeseries")
    assert len(lines) >= 15 and labels  # most of the 22 windows after the reference drifted
    first = min(m["x"] for m in lines) - chart["x"]
    assert first < 0.2 * chart["w"]  # the first marker is near the left edge
    # labels sit in one row above the marker lines, never over the plot
    top = min(m["y"] for m in lines)
    assert all(b["y"] + b["h"] <= top + 1 for b in labels)
    assert top < chart["y"] + PLOT_TOP / 760 * chart["w"]


def test_monitor_canary_legend_fits(page: Page) -> None:
    assert layout_problems(page, f"/monitor?{MONITOR_CANARY}") == []
    pg = page.page
    keys = pg.eval_on_selector_all(
        "figure.chart[data-metric=volume] g.key text", "els => els.map(e => e.textContent)"
    )
    assert keys == ["served", "baseline", "candidate"]


def test_ab_without_an_interval_yet_says_so(page: Page) -> None:
    assert layout_problems(page, f"/ab?{AB_EMPTY}") == []
    pg = page.page
    assert pg.locator("figure.ab-path").count() == 0
    note = pg.locator("p.no-chart")
    assert note.is_visible() and "burn-in of 100 observations" in note.inner_text()
    assert "there are 60" in note.inner_text()


def test_ab_failing_guardrail_is_red(page: Page) -> None:
    assert layout_problems(page, f"/ab?{AB_HARM}") == []
    pg = page.page
    row = pg.locator("tr.guardrail[data-metric=error_rate]")
    assert row.get_attribute("data-status") == "failing" and "failing" in (
        row.get_attribute("class") or ""
    )
    cell_bg = row.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor")
    status = row.locator("td.status").evaluate("e => getComputedStyle(e).color")
    ok_bg = pg.locator("tr.guardrail:not(.failing) td").first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert reddish(cell_bg) and reddish(status) and not reddish(ok_bg), (cell_bg, status, ok_bg)
    # the primary metric's chart: a band, and its legend names the series in full
    assert page.marks("figure.ab-path polygon.band")[0]["w"] > 100
    legend = pg.eval_on_selector_all(
        "figure.ab-path g.key text", "els => els.map(e => e.textContent)"
    )
    assert legend == ["llm_judge:helpfulness: candidate − baseline"]


def reddish(css: str) -> bool:
    """A computed colour (``rgb(...)``, ``rgba(...)`` or ``color(srgb r g b / a)``) whose
    red clearly leads, and that is not transparent."""
    inner = css[css.index("(") + 1 : -1].removeprefix("srgb")
    parts = [float(p) for p in inner.replace("/", " ").replace(",", " ").split()]
    scale = 255.0 if css.startswith("color(") else 1.0
    r, g, b = (scale * v for v in parts[:3])
    alpha = parts[3] if len(parts) > 3 else 1.0
    return alpha > 0 and r > g + 40 and r > b + 40


def test_the_token_cookie_works_in_a_real_browser(browser: Any, layout: LayoutStore) -> None:
    """The printed address sets the cookie, the token leaves the address bar, and links
    (same-site navigations) carry the SameSite=Strict cookie; a fresh browser gets 401."""
    from calipers.web import create_app
    from tests._servers import ServerThread

    token = "browser-test-token-0123456789"
    server = ServerThread(create_app(layout.url, token=token), graceful_s=5).start()
    try:
        context = browser.new_context()
        pg = context.new_page()
        r = pg.goto(f"{server.url}/runs?token={token}")
        assert r is not None and r.status == 200 and pg.url == f"{server.url}/runs"
        pg.locator("nav.top").get_by_role("link", name="Leaderboard", exact=True).click()
        pg.wait_for_url(f"{server.url}/leaderboard")
        assert "Token needed" not in pg.content()
        [cookie] = context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        context.close()
        fresh = browser.new_page()
        r = fresh.goto(f"{server.url}/runs")
        assert r is not None and r.status == 401
        fresh.close()
    finally:
        server.stop()

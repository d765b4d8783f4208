"""The Monitor page over six hours of synthetic gateway traffic (tests/web/traffic.py) whose
drift is known by construction: none in the calm windows, longer prompts and a new topic in
the last hour. Window metrics are checked against Wilson intervals computed here from the
records; the JSON against ``calipers monitor --json`` run with the command the page prints;
the printed export command by running it."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from calipers.cli import cli
from calipers.store import TrafficRecord
from calipers.web import create_app
from calipers.web._charts import PLOT_LEFT, PLOT_RIGHT
from tests.web.conftest import LOOPBACK, PAYLOAD, Tags, pct
from tests.web.traffic import (
    CALM,
    DRIFT,
    DRIFT_HOUR,
    PER_HOUR,
    REF_HOURS,
    add_monitor_traffic,
    hour,
)

CHARTS = 5  # volume, latency p50, p95, error and refusal rate (cost: no prices given)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[TrafficRecord]]:
    path = str(tmp_path_factory.mktemp("monitor") / "traffic.db")
    return path, add_monitor_traffic(path)


@pytest.fixture(scope="module")
def client(store_path: tuple[str, list[TrafficRecord]]) -> Iterator[TestClient]:
    with TestClient(create_app(store_path[0]), base_url=LOOPBACK) as c:
        yield c


def main(html: str) -> str:
    """The page without its stylesheet (which names every class)."""
    return html[html.index("<main>") :]


@pytest.fixture(scope="module")
def calm(client: TestClient) -> str:
    r = client.get(f"/monitor?{CALM}")
    assert r.status_code == 200
    return main(r.text)


@pytest.fixture(scope="module")
def drift(client: TestClient) -> str:
    r = client.get(f"/monitor?{DRIFT}")
    assert r.status_code == 200
    return main(r.text)


def x_at(t: datetime, lo: datetime, hi: datetime) -> float:
    """Where time t lands on the chart's 760-wide viewBox (the chart's linear x scale)."""
    share = (t - lo).total_seconds() / (hi - lo).total_seconds()
    return float(PLOT_LEFT + share * (PLOT_RIGHT - PLOT_LEFT))


def code(html: str, css: str) -> str:
    m = re.search(rf'<code class="[^"]*\b{css}\b[^"]*">(.*?)</code>', html, re.S)
    assert m, css
    return m.group(1).replace("&#39;", "'").replace("&amp;", "&").replace("&#34;", '"')


def invoke(cmd: str, *extra: str) -> tuple[int, str]:
    args = shlex.split(cmd)
    assert args[0] == "calipers"
    out = CliRunner().invoke(cli, [*args[1:], *extra])
    return out.exit_code, out.output


def test_no_drift_no_banner_and_no_markers(calm: str) -> None:
    assert "drift-alert" not in calm and "alert-marker" not in calm
    assert "No drift: none of the 2 windows compared with the reference" in calm
    assert "alpha 0.05 per window" in calm and "expect about 0.1 with a false alarm" in calm
    assert len(Tags(calm).attr("figure", "data-metric")) == CHARTS


def test_drift_banner_alarms_and_marker_on_the_drifted_window(drift: str) -> None:
    assert drift.count('class="drift-alert"') == 1
    banner = re.search(r'<div class="drift-alert"[^>]*>(.*?)</div>', drift, re.S)
    assert banner and "1 of 3 windows" in banner.group(1) and "06-02 05:00" in banner.group(1)
    # the injected drift: longer prompts and a new topic, in the last window only
    rows = Tags(drift).tags
    alarmed = {
        (a["data-window"], a["data-feature"])
        for t, a in rows
        if t == "tr" and a.get("class") == "alarm"
    }
    assert {w for w, _ in alarmed} == {hour(DRIFT_HOUR).isoformat()}
    assert {"prompt_length", "topic"} <= {f for _, f in alarmed}
    # one marker per chart, in the middle of the drifted window
    xs = [
        float(a["data-x"] or "nan")
        for t, a in rows
        if t == "g" and a.get("class") == "alert-marker"
    ]
    expected = x_at(hour(DRIFT_HOUR + 0.5), hour(REF_HOURS), hour(DRIFT_HOUR + 1))
    assert len(xs) == CHARTS and all(x == pytest.approx(expected, abs=0.06) for x in xs)
    assert "drift: prompt_length" in drift


def test_window_metrics_match_intervals_computed_from_the_records(
    store_path: tuple[str, list[TrafficRecord]], calm: str
) -> None:
    records = store_path[1]
    for h in (REF_HOURS, REF_HOURS + 1):
        calls = [r for r in records if r.role == "baseline" and hour(h) <= r.ts < hour(h + 1)]
        assert len(calls) == PER_HOUR
        failed = sum(not (r.status == 200 and r.error is None) for r in calls)
        mid = hour(h + 0.5).strftime("%Y-%m-%d %H:%M:%S UTC")
        assert f"baseline · {mid}: {pct(failed, len(calls))} (n={len(calls)})" in calm
        assert f"baseline · {mid}: 100.000 [100.000, 100.000] (n=100)" in calm  # volume


def test_novelty_lists_the_new_topic_and_escapes_prompts(drift: str) -> None:
    tags = Tags(drift)
    assert not {"script", "img", "iframe"} & tags.names()
    assert not [a for _, attrs in tags.tags for a in attrs if a.startswith("on")]
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in drift
    assert "onerror=&#34;window.__xss=2&#34;" in drift
    clusters = re.search(r'<table class="clusters">(.*?)</table>', drift, re.S)
    assert clusters and re.search(r"pasta|recipe|oven|sauce", clusters.group(1))
    assert PAYLOAD not in drift


def test_api_is_strict_json_and_matches_the_cli(client: TestClient, drift: str) -> None:
    r = client.get(f"/api/monitor?{DRIFT}")

    def no_nan(x: str) -> None:
        raise AssertionError(f"not strict JSON: {x}")

    api = json.loads(r.text, parse_constant=no_nan)
    assert api["n_drifted_windows"] == 1 and api["settings"]["embeddings"] == "tfidf-lsa"
    status, out = invoke(code(drift, "cmd-same"), "--json")
    assert status == 0, out
    assert json.loads(out) == api


def test_printed_export_command_exports_the_listed_outliers(drift: str, tmp_path: Path) -> None:
    shown = re.search(r'class="n-outliers">([\d,]+)<', drift)
    assert shown is not None
    flagged = int(re.sub(r"\D", "", shown.group(1)))
    assert flagged >= 16  # the cooking prompts and the three payloads
    queue = tmp_path / "queue.jsonl"
    cmd = code(drift, "cmd-review").replace("queue.jsonl", str(queue))
    status, out = invoke(cmd)
    assert status == 0, out
    lines = queue.read_text().splitlines()
    assert len(lines) == flagged
    assert sum(PAYLOAD in json.loads(line)["prompt"] for line in lines) == 3


def test_no_traffic_and_bad_parameters(client: TestClient) -> None:
    r = client.get("/monitor?since=2030-01-01&until=2030-01-02")
    assert r.status_code == 200 and "No gateway traffic is logged" in r.text
    assert "<figure" not in r.text
    bad = client.get("/monitor?window=soon")
    assert bad.status_code == 400 and "Bad duration" in bad.text
    j = client.get("/api/monitor?alpha=2")
    assert j.status_code == 400 and "alpha" in j.json()["error"]
    assert client.get("/api/monitor?embeddings=word2vec").status_code == 400


def test_default_reference_holds_traffic_or_the_page_says_none_does(client: TestClient) -> None:
    """Without reference=: the first windows with traffic (here the first hour: 100
    requests, a third of all); with all traffic in one window the page says no reference
    holds any and how to set one, instead of a drift section that silently tests nothing."""
    span = urlencode({"since": hour(0).isoformat(), "until": hour(3).isoformat()})
    page = main(client.get(f"/monitor?{span}").text)
    assert f"({PER_HOUR} requests; " in page and "no-reference" not in page
    # two windows tested (either wording: "Drift: N of 2 windows ..." or "none of the 2 ...")
    assert re.search(r"of (the )?2 windows compared with the reference", page)
    one = urlencode({"since": hour(0).isoformat(), "until": hour(6).isoformat(), "window": "1d"})
    page = main(client.get(f"/monitor?{one}").text)
    m = re.search(r'<p class="notice problem no-reference"[^>]*>(.*?)</p>', page, re.S)
    assert m and "No reference period holds traffic" in m.group(1)
    assert "--reference START..END" in m.group(1) and "No reference period." in page
    api = client.get(f"/api/monitor?{one}").json()["reference"]
    assert api["n_requests"] == 0 and "one window" in api["problem"]

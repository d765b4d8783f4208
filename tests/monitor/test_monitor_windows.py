"""Windowed metrics against numbers computed by hand from the planted traffic."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from calipers.errors import ConfigError
from calipers.monitor._report import MonitorConfig, monitor
from calipers.monitor._when import (
    floor_time,
    parse_duration,
    parse_range,
    parse_when,
    window_edges,
)
from calipers.store import OnlineScoreRecord, Store
from tests.monitor._monitor_fixtures import HOUR, T0, call, store_url

REFUSAL = "I'm sorry, but I can't help with that."
Z = 1.959963984540054


def wilson_by_hand(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture
def planted(tmp_path: Path) -> tuple[str, dict[str, list[float]]]:
    """Window 0: 30 requests (3 baseline errors, 2 refusals, 10 shadow copies); window 1:
    nothing; window 2: 5 requests. Latencies drawn, so the percentiles are not round."""
    rng = np.random.default_rng(7)
    lat = rng.lognormal(np.log(300), 0.5, 35)
    recs, ok_lat, costs = [], [], []
    for i in range(30):
        ts = T0 + timedelta(minutes=2 * i)
        err = i in (3, 11, 19)
        refusal = i in (5, 6)
        tokens = (10 + i, 40 + 2 * i)
        recs.append(
            call(
                f"a{i}",
                "baseline",
                ts,
                served=True,
                latency=float(lat[i]),
                status=500 if err else 200,
                error="upstream 500" if err else None,
                response=None if err else (REFUSAL if refusal else f"Answer {i}."),
                tokens=None if err else tokens,
            )
        )
        if not err:
            ok_lat.append(float(lat[i]))
            costs.append((tokens[0] * 1.0 + tokens[1] * 2.0) / 1e6)
        if i % 3 == 0:
            recs.append(call(f"a{i}", "candidate", ts, served=False, latency=100.0 + i))
    for j in range(5):
        recs.append(
            call(
                f"c{j}",
                "baseline",
                T0 + 2 * HOUR + timedelta(minutes=j),
                served=True,
                latency=float(lat[30 + j]),
            )
        )
    url = store_url(tmp_path)
    with Store.open(url) as store:
        store.add_traffic(recs)
        store.add_online_scores(
            [
                OnlineScoreRecord(
                    pair_id=f"a{i}", role="baseline", scorer="helpful", value=(i % 4) / 4
                )
                for i in range(8)
            ]
            + [
                OnlineScoreRecord(
                    pair_id=f"a{i}", role="baseline", scorer="helpful", value=math.nan
                )
                for i in range(8, 10)
            ]
            + [
                OnlineScoreRecord(
                    pair_id=f"a{i}", role="baseline", scorer="feedback", value=float(i % 2)
                )
                for i in range(10)
            ]
        )
    return url, {"ok_lat": ok_lat, "costs": costs}


def run(url: str, **kw: object) -> dict[str, object]:
    config = MonitorConfig(
        since=T0, until=T0 + 3 * HOUR, embeddings="tfidf", n_permutations=199, **kw
    )
    with Store.open(url) as store:
        report = monitor(store, config)
    text = json.dumps(report.to_dict(), allow_nan=False)  # strict JSON: no NaN, no inf
    out: dict[str, object] = json.loads(text)
    return out


def test_metrics_match_hand_counts(planted: tuple[str, dict[str, list[float]]]) -> None:
    url, truth = planted
    d = run(url, prices={"baseline": (1.0, 2.0)})
    windows = d["windows"]
    assert isinstance(windows, list) and len(windows) == 3
    assert [w["n_requests"] for w in windows] == [30, 0, 5]
    assert set(windows[0]["arms"]) == {"baseline", "candidate"}  # shadow: served == baseline
    b = windows[0]["arms"]["baseline"]
    assert b["volume"]["value"] == 30 and b["volume"]["method"] == "count"
    ok_lat = np.array(truth["ok_lat"])
    assert b["latency_p50_ms"]["value"] == pytest.approx(np.percentile(ok_lat, 50))
    assert b["latency_p95_ms"]["value"] == pytest.approx(np.percentile(ok_lat, 95))
    assert b["latency_p50_ms"]["low"] in ok_lat and b["latency_p50_ms"]["high"] in ok_lat
    assert b["latency_p95_ms"]["high"] is None  # 27 values cannot bound the p95 from above
    assert b["error_rate"]["value"] == pytest.approx(3 / 30)
    assert (b["error_rate"]["low"], b["error_rate"]["high"]) == pytest.approx(wilson_by_hand(3, 30))
    assert b["refusal_rate"]["value"] == pytest.approx(2 / 27)
    assert b["refusal_rate"]["n"] == 27
    assert b["cost_per_request_usd"]["value"] == pytest.approx(np.mean(truth["costs"]))
    assert b["cost_per_request_usd"]["n"] == 27
    cand = windows[0]["arms"]["candidate"]
    assert cand["volume"]["value"] == 10
    assert cand["cost_per_request_usd"]["method"] == "skipped: no prices for candidate"
    empty = windows[1]["arms"]["baseline"]
    assert empty["volume"]["value"] == 0
    assert empty["error_rate"]["value"] is None and empty["error_rate"]["n"] == 0


def test_online_scores_and_feedback(planted: tuple[str, dict[str, list[float]]]) -> None:
    url, _truth = planted
    windows = run(url)["windows"]
    assert isinstance(windows, list)
    b = windows[0]["arms"]["baseline"]
    helpful = b["score:helpful"]
    assert helpful["n"] == 8  # the two NaN (unscorable) values are left out, not zeros
    assert helpful["value"] == pytest.approx(np.mean([(i % 4) / 4 for i in range(8)]))
    fb = b["feedback"]
    assert fb["method"] == "wilson" and fb["value"] == pytest.approx(0.5) and fb["n"] == 10
    assert b["cost_per_request_usd"]["method"] == "skipped: no prices"
    assert b["cost_per_request_usd"]["value"] is None


def test_times_and_windows() -> None:
    now = datetime(2025, 6, 2, 12, 30, tzinfo=UTC)
    assert parse_when("24h", now) == now - timedelta(hours=24)
    assert parse_when("2025-06-01", now) == datetime(2025, 6, 1, tzinfo=UTC)
    assert parse_when("2025-06-01T10:00+02:00", now) == datetime(2025, 6, 1, 8, tzinfo=UTC)
    assert parse_range("2d..1d", now) == (now - timedelta(days=2), now - timedelta(days=1))
    assert parse_duration("15m") == timedelta(minutes=15)
    assert floor_time(now, HOUR) == datetime(2025, 6, 2, 12, tzinfo=UTC)
    edges = window_edges(T0, T0 + timedelta(minutes=150), HOUR)
    assert [b - a for a, b in edges] == [HOUR, HOUR, timedelta(minutes=30)]
    for bad in ("0h", "1y", "soon"):
        with pytest.raises(ConfigError):
            parse_when(bad, now) if bad == "soon" else parse_duration(bad)
    with pytest.raises(ConfigError):
        parse_range("1d..2d", now)

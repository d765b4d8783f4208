"""The monitor on a planted store of 2,400 calls (6 hourly windows of 200 shadow requests):
what the database counts (requests, calls, error rates) and the latency quantiles equal the
values computed here with numpy and the Wilson formula, whether or not the windows' requests
are sampled; a sampled window says so, and its sample is a fixed uniform draw of exactly
``sample`` requests. On SQLite and, with ``CALIPERS_TEST_POSTGRES_URL``, PostgreSQL (a schema
of its own)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from calipers.monitor import MonitorConfig, monitor
from calipers.store import Store, TrafficRecord

T0 = datetime(2026, 5, 4, tzinfo=UTC)
HOURS, PER_HOUR = 6, 200
REFUSAL = "I'm sorry, but I can't help with that."
Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score interval by its textbook formula (Wilson 1927), computed here."""
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def planted() -> list[TrafficRecord]:
    rng = np.random.default_rng(22)
    out = []
    for h in range(HOURS):
        for i in range(PER_HOUR):
            ts = T0 + timedelta(hours=h, seconds=float(rng.uniform(0, 3600)))
            for role, err, lat in (("baseline", 0.05, 6.0), ("candidate", 0.15, 6.3)):
                failed = rng.random() < err
                refused = rng.random() < 0.1
                out.append(
                    TrafficRecord(
                        pair_id=f"h{h}-{i:04d}",
                        role=role,
                        served=role == "baseline",
                        mode="shadow",
                        endpoint="/v1/chat/completions",
                        upstream=f"http://{role}.invalid/v1",
                        request={"messages": [{"role": "user", "content": f"question {i} {h}"}]},
                        ts=ts,
                        response=None if failed else (REFUSAL if refused else f"answer {i}"),
                        status=500 if failed else 200,
                        error="upstream 500" if failed else None,
                        latency_ms=float(rng.lognormal(lat, 0.5)),
                    )
                )
    return out


@pytest.fixture(params=["sqlite", "postgresql"], scope="module")
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    records = planted()
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('large') / 'c.db'}"
        schema = None
    else:
        base = os.environ.get("CALIPERS_TEST_POSTGRES_URL")
        if not base:
            pytest.skip("PostgreSQL: set CALIPERS_TEST_POSTGRES_URL")
        schema = f"calipers_monperf_{os.getpid()}"
        engine = sa.create_engine(base)
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        u = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        url = u.render_as_string(hide_password=False)
    with Store.open(url) as s:
        s.add_traffic(records)
        yield s, records, url
    if schema is not None:
        with engine.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()


def _run(store: Store, **kw: Any) -> dict[str, Any]:
    c = MonitorConfig(
        since=T0, until=T0 + timedelta(hours=HOURS), embeddings="tfidf", latest_only=True, **kw
    )
    return monitor(store, c).to_dict()


def _window(records: list[TrafficRecord], h: int, role: str) -> list[TrafficRecord]:
    a, b = T0 + timedelta(hours=h), T0 + timedelta(hours=h + 1)
    return [r for r in records if r.role == role and a <= r.ts < b]


@pytest.mark.parametrize("sample", [150, 1000])
def test_counts_rates_and_quantiles_are_the_planted_ones(store: Any, sample: int) -> None:
    s, records, _url = store
    d = _run(s, sample=sample)
    assert [w["n_requests"] for w in d["windows"]] == [PER_HOUR] * HOURS
    for h, w in enumerate(d["windows"]):
        assert set(w["arms"]) == {"baseline", "candidate"}  # shadow: served = baseline
        for role, m in w["arms"].items():
            calls = _window(records, h, role)
            failed = sum(not r.ok for r in calls)
            lat = np.array([r.latency_ms for r in calls if r.ok])
            assert m["volume"]["value"] == len(calls) == PER_HOUR
            assert m["error_rate"]["value"] == pytest.approx(failed / len(calls))
            lo, hi = wilson(failed, len(calls))
            assert (m["error_rate"]["low"], m["error_rate"]["high"]) == pytest.approx((lo, hi))
            for q, key in ((0.5, "latency_p50_ms"), (0.95, "latency_p95_ms")):
                assert m[key]["value"] == pytest.approx(float(np.quantile(lat, q)))
                assert m[key]["n"] == lat.size and "sample" not in m[key]["method"]
            ok = [r for r in calls if r.ok]
            refused = sum(r.response == REFUSAL for r in ok)
            rate = m["refusal_rate"]
            if sample >= PER_HOUR:  # every request read: the planted count
                assert rate["value"] == pytest.approx(refused / len(ok))
                assert rate["method"] == "wilson"
            else:  # a sample of 150 requests: said, and its n is the sample's answered calls
                assert rate["method"] == f"wilson; sample of {sample} of {PER_HOUR} requests"
                assert rate["n"] <= sample < len(ok)
    sampled = [n for n in d["notes"] if n.startswith("sampled:")]
    assert bool(sampled) is (sample < PER_HOUR)
    for w in d["drift"]:
        assert w.get("sample") == ({"n": sample, "of": PER_HOUR} if sample < PER_HOUR else None)


def test_a_sample_is_exactly_k_requests_and_the_same_on_every_look(store: Any) -> None:
    s, _records, _url = store
    a, b = T0, T0 + timedelta(hours=1)
    draws = [
        s.sample_traffic(since=a, until=b, limit=150, requests=PER_HOUR, seed=0) for _ in range(2)
    ]
    pairs = [sorted({r.pair_id for r in d}) for d in draws]
    assert pairs[0] == pairs[1] and len(pairs[0]) == 150
    other = s.sample_traffic(since=a, until=b, limit=150, requests=PER_HOUR, seed=1)
    assert sorted({r.pair_id for r in other}) != pairs[0]  # the seed picks another sample
    assert all(len([r for r in draws[0] if r.pair_id == p]) == 2 for p in pairs[0])  # both arms
    everything = s.sample_traffic(since=a, until=b, limit=PER_HOUR, requests=PER_HOUR)
    assert len(everything) == 2 * PER_HOUR


def test_latencies_beyond_the_limit_are_a_sample_said_in_the_method(store: Any) -> None:
    s, _records, _url = store
    d = _run(s, max_latencies=100)
    m = d["windows"][0]["arms"]["baseline"]["latency_p95_ms"]
    assert "sample of about 100 answered calls" in m["method"] and 50 < m["n"] < 150
    assert any("latency quantiles" in n for n in d["notes"])


def test_the_index_the_queries_use_exists(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "c.db")) as s:
        engine = sa.create_engine(s.url)
    names = {i["name"] for i in sa.inspect(engine).get_indexes("traffic")}
    engine.dispose()
    assert "ix_traffic_ts_mode_role_served_status_error_latency_ms_pair_id" in names


def test_an_outlier_without_words_is_left_out_of_the_clusters() -> None:
    # Its TF-IDF vector is 0 (no angle): the clustering used to fail on it.
    from calipers.monitor._novelty import _group

    x = np.array([[1.0, 0.0], [1.0, 0.0], [0.9, 0.1], [0.0, 0.0]])
    assert _group(x, 0.5, 3) == [0, 0, 0, None]


def test_the_page_and_the_cli_say_the_sample(store: Any) -> None:
    import json
    from urllib.parse import urlencode

    from click.testing import CliRunner
    from fastapi.testclient import TestClient

    from calipers.cli import cli
    from calipers.web import create_app

    _s, _records, url = store
    since, until = T0.isoformat(), (T0 + timedelta(hours=HOURS)).isoformat()
    q = urlencode({"since": since, "until": until, "latest": "1", "embeddings": "tfidf"})
    with TestClient(create_app(url), base_url="http://127.0.0.1") as client:
        page = client.get(f"/monitor?{q}").text
    assert f"drift tested on a sample of 150 of {PER_HOUR}" in page
    # a skipped metric says why once, not once per sampled window and arm
    assert "cost per request (USD)</strong>: skipped: no prices (add price=" in page
    # counts are drawn from 0 in whole numbers: 200 calls in every window is not a cliff
    volume = re.search(r'<svg class="plot timeseries"[^>]*aria-label="volume.*?</svg>', page, re.S)
    assert volume is not None
    ticks = re.findall(r"<text[^>]*>([^<]*)</text>", volume.group(0))
    assert ticks[:5] == ["0", "50", "100", "150", "200"]
    args = ["--store", url, "monitor", "--since", since, "--until", until, "--latest"]
    out = CliRunner().invoke(cli, [*args, "--embeddings", "tfidf", "--sample", "300", "--json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert "sample" not in d["drift"][0] and not any(n.startswith("sampled") for n in d["notes"])


def test_a_windows_drift_is_the_same_whichever_span_is_shown(store: Any) -> None:
    """Each window's tests draw from a generator of the seed and the window's start: hour 5
    tested in the six-hour view and alone give the same statistics and p-values."""
    s, _records, _url = store
    ref = (T0, T0 + timedelta(hours=2))
    common = {"embeddings": "tfidf", "reference": ref, "sample": 150}
    wide = monitor(s, MonitorConfig(since=T0, until=T0 + timedelta(hours=HOURS), **common))
    alone = monitor(
        s, MonitorConfig(since=T0 + timedelta(hours=5), until=T0 + timedelta(hours=6), **common)
    )
    last = [w.to_dict() for w in wide.drift if w.start == T0 + timedelta(hours=5)]
    assert len(wide.drift) == 4 and last == [alone.drift[0].to_dict()]

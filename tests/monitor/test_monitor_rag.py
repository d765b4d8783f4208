"""RAG traffic in ``calipers monitor``: the unsupported-answer and abstention rates per window
(checked against counts made here from the planted answers), drift alarms on them (the
week-one story: a retriever degrading mid-week takes unsupported answers from ~4% to ~20%;
the alarm fires after the change and not before) and their false-alarm rate without change."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from calipers.cli import cli
from calipers.monitor import (
    DriftOptions,
    Exchange,
    MonitorConfig,
    RagProfile,
    TrafficProfile,
    monitor,
    pair_records,
    rag_answer,
    simulate_alarms,
    synthetic_traffic,
)
from calipers.monitor._drift import drift_tests
from calipers.monitor._features import extract_features
from calipers.monitor._scores import ScoreIndex
from calipers.monitor._synthetic_rag import ABSTAIN_TEXT
from calipers.monitor._vectors import Embedder
from calipers.store import RAG_FIELD, Store, TrafficRecord
from tests.monitor._monitor_fixtures import call, store_url

DAY = timedelta(days=1)
T0 = datetime(2025, 6, 2, tzinfo=UTC)
HEALTHY = TrafficProfile(rag=RagProfile())  # recall 0.95: 3.75% unsupported
DEGRADED = TrafficProfile(rag=RagProfile(recall=0.73))  # 20.25% unsupported
ALPHA = 0.05
PASSAGES = [
    {"id": "d1", "title": "Zorvia", "text": "The capital of Zorvia is Quelport."},
    {"id": "d2", "text": "Brelland was founded by Amsel Tor."},
]


def rag_call(pid: str, response: str | None, *, status: int = 200, rag: object = None) -> Exchange:
    rec = call(pid, "baseline", T0, served=True, latency=10.0, response=response, status=status)
    request = {**rec.request, RAG_FIELD: {"passages": PASSAGES} if rag is None else rag}
    return pair_records([rec.model_copy(update={"request": request})])[0]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("Quelport.", "supported"),
        ("It was founded by Amsel Tor", "supported"),
        ("Varnholm.", "unsupported"),
        ("I don't know.", "abstained"),
        ("The passages do not contain the answer.", "abstained"),
        ("I'm sorry, but I can't help with that request.", "other"),
        ("", "other"),
    ],
)
def test_each_answer_is_classified_against_its_passages(response: str, expected: str) -> None:
    ex = rag_call("p", response)
    assert rag_answer(ex, ex.served) == expected


def test_calls_without_passages_or_without_an_answer_are_not_rag_answers() -> None:
    failed = rag_call("p", None, status=500)
    malformed = rag_call("q", "Quelport.", rag={"passages": "d1"})
    plain = pair_records([call("r", "baseline", T0, served=True, latency=1.0)])[0]
    for ex in (failed, malformed, plain):
        assert rag_answer(ex, ex.served) is None


def planted(rec: TrafficRecord) -> str | None:
    """The synthetic answer's truth, by a second method: its value found as a whole word by a
    plain regular expression in the passages it was shown (the generator abstains with one
    fixed text, and its world's words are single capitalised words)."""
    if not rec.ok:
        return None
    text = rec.response or ""
    if text == ABSTAIN_TEXT:
        return "abstained"
    if text.startswith("I'm sorry"):
        return "other"
    value = text.rstrip(".")
    shown = [p["text"] for p in rec.request[RAG_FIELD]["passages"]]
    word = re.compile(rf"\b{re.escape(value)}\b")
    return "supported" if any(word.search(t) for t in shown) else "unsupported"


def week(url: str, per_day: int = 150, change: int = 4, seed: int = 3) -> list[TrafficRecord]:
    """Seven days of RAG traffic; the retriever degrades from day ``change`` on."""
    rng = np.random.default_rng(seed)
    out: list[TrafficRecord] = []
    with Store.open(url) as store:
        for d in range(7):
            records = synthetic_traffic(
                per_day,
                start=T0 + d * DAY,
                end=T0 + (d + 1) * DAY,
                rng=rng,
                profile=HEALTHY if d < change else DEGRADED,
                prefix=f"d{d}-",
            )
            store.add_traffic(records)
            out += records
    return out


def week_config(**extra: object) -> MonitorConfig:
    settings: dict[str, object] = {
        "since": T0,
        "until": T0 + 7 * DAY,
        "window": DAY,
        "embeddings": "tfidf",
        "n_permutations": 199,
    }
    return MonitorConfig.model_validate(settings | extra)


def test_week_one_the_alarm_fires_after_the_retriever_degrades_and_not_before(
    tmp_path: Path,
) -> None:
    url = store_url(tmp_path)
    records = week(url)
    with Store.open(url) as store:
        report = monitor(store, week_config())
    # rates per window: exactly the planted counts, with Wilson intervals
    for d, w in enumerate(report.windows):
        served = [r for r in records if r.served and T0 + d * DAY <= r.ts < T0 + (d + 1) * DAY]
        truth = [t for r in served if (t := planted(r)) is not None]
        m = w.arms["baseline"]
        for key, which in (
            ("rag_unsupported_rate", "unsupported"),
            ("rag_abstention_rate", "abstained"),
        ):
            k, n = truth.count(which), len(truth)
            assert m[key].n == n and m[key].value == pytest.approx(k / n)
            lo, hi = wilson(k, n)
            assert m[key].low == pytest.approx(lo) and m[key].high == pytest.approx(hi)
    unsupported = [w.arms["baseline"]["rag_unsupported_rate"].value for w in report.windows]
    assert max(unsupported[:4]) < 0.08 and min(unsupported[4:]) > 0.1, unsupported
    # the reference is days 0-1; days 2-3 are quiet, every day from 4 on raises the alarm
    assert report.reference[:2] == (T0, T0 + 2 * DAY)
    alarmed = {
        (w.start - T0).days for w in report.drift
        for r in w.alarms if r.feature == "rag_unsupported_rate"
    }  # fmt: skip
    assert alarmed == {4, 5, 6}, alarmed
    row = next(r for r in report.drift[2].alarms if r.feature == "rag_unsupported_rate")
    assert re.fullmatch(r"\d+\.\d% -> \d+\.\d%", row.detail)
    assert any(n.startswith("RAG: 1,050 of 1,050 requests carry") for n in report.notes)


def wilson(k: int, n: int, z: float = float(stats.norm.ppf(0.975))) -> tuple[float, float]:
    """Wilson's score interval from its formula (a second method to ``calipers.stats``)."""
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return mid - half, mid + half


def test_traffic_without_passages_keeps_exactly_its_tests_and_metrics(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    rng = np.random.default_rng(1)
    with Store.open(url) as store:
        for d in range(2):
            store.add_traffic(
                synthetic_traffic(80, start=T0 + d * DAY, end=T0 + (d + 1) * DAY, rng=rng)
            )
        report = monitor(store, week_config(until=T0 + 2 * DAY, min_reference=50))
    assert all("rag" not in k for w in report.windows for m in w.arms.values() for k in m)
    assert all("rag" not in r.feature for w in report.drift for r in w.rows)
    assert not any(n.startswith("RAG") for n in report.notes)


def no_change_rag_alarms(reps: int, n: int, seed: int) -> tuple[int, int]:
    """``reps`` (reference, window) pairs of ``n`` RAG requests without change, tested as the
    monitor tests a window (text tests left out: they need no passages): windows where a RAG
    test's own p-value is below alpha, and where it alarms after Holm."""
    rng = np.random.default_rng(seed)
    embedder = Embedder("tfidf", seed=0)
    raw = holm = 0
    for _ in range(reps):
        sides = []
        for _side in range(2):
            records = synthetic_traffic(n, start=T0, end=T0 + DAY, rng=rng, profile=HEALTHY)
            f = extract_features(pair_records(records), ScoreIndex(), lambda _t: "en")
            sides.append(dataclasses.replace(f, texts=[]))
        rows = [
            r
            for r in drift_tests(*sides, embedder=embedder, rng=rng,
                                 options=DriftOptions(alpha=ALPHA, n_permutations=199))
            if r.feature.startswith("rag_")
        ]  # fmt: skip
        assert len(rows) == 2
        raw += any(r.test.p_value < ALPHA for r in rows if r.feature == "rag_unsupported_rate")
        holm += any(r.test.drifted for r in rows)
    return raw, holm


def test_no_change_false_alarms_at_most_at_the_nominal_rate() -> None:
    reps = 200
    raw, holm = no_change_rag_alarms(reps, n=100, seed=11)
    # the unsupported-rate test alone rejects at most alpha of the time: its count is below
    # the 99th percentile of Binomial(200, 0.05), 18
    bound = int(stats.binom.ppf(0.99, reps, ALPHA))
    assert raw <= bound, (raw, bound)
    assert holm <= raw + bound


@pytest.mark.slow
def test_no_change_whole_window_false_alarm_rate_with_rag_traffic() -> None:
    r = simulate_alarms(
        reps=200,
        n=100,
        rng=np.random.default_rng(0),
        reference=HEALTHY,
        options=DriftOptions(alpha=ALPHA, n_permutations=199, topics=False),
    )
    assert r.alarms <= int(stats.binom.ppf(0.99, 200, ALPHA)), r.to_dict()


def test_a_degraded_retriever_is_detected_in_most_windows() -> None:
    r = simulate_alarms(
        reps=10,
        n=150,
        rng=np.random.default_rng(2),
        reference=HEALTHY,
        current=DEGRADED,
        options=DriftOptions(alpha=ALPHA, n_permutations=199, topics=False),
    )
    assert r.by_feature.get("rag_unsupported_rate/chi2", 0) >= 8, r.to_dict()


def test_expected_unsupported_rates_of_the_story() -> None:
    assert HEALTHY.rag is not None and DEGRADED.rag is not None
    assert HEALTHY.rag.unsupported_rate == pytest.approx(0.05 * 0.75)
    assert DEGRADED.rag.unsupported_rate == pytest.approx(0.27 * 0.75)


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output


def test_cli_shows_the_rates_and_fails_on_the_rag_alarm(tmp_path: Path) -> None:
    url = store_url(tmp_path)
    week(url)
    span = ["--since", T0.isoformat(), "--until", (T0 + 7 * DAY).isoformat(), "--window", "1d"]
    fast = ["--embeddings", "tfidf", "--seed", "1"]
    code, out = invoke(["--store", url, "monitor", *span, *fast, "--json"])
    assert code == 0, out
    d = json.loads(out)
    first = d["windows"][0]["arms"]["baseline"]
    assert set(first["rag_unsupported_rate"]) >= {"value", "low", "high", "n"}
    assert first["rag_abstention_rate"]["n"] == first["rag_unsupported_rate"]["n"] > 100
    fired = [
        (t["feature"], w["start"][:10]) for w in d["drift"] for t in w["tests"] if t["drifted"]
    ]
    assert ("rag_unsupported_rate", "2025-06-06") in fired
    code, out = invoke(["--store", url, "monitor", *span, *fast, "--fail-on-drift"])
    assert code == 1, out
    assert "RAG unsupported" in out and "RAG abstained" in out and "rag_unsupported_rate" in out
    # before the change: no alarm, exit 0
    quiet = ["--since", T0.isoformat(), "--until", (T0 + 4 * DAY).isoformat(), "--window", "1d"]
    code, out = invoke(["--store", url, "monitor", *quiet, *fast, "--fail-on-drift", "--json"])
    assert code == 0, out
    assert not any(t["drifted"] for w in json.loads(out)["drift"] for t in w["tests"])


def test_cli_simulate_retriever_drift() -> None:
    code, out = invoke(
        ["monitor", "simulate", "--drift", "retriever", "--reps", "5", "--n", "150", "--json"]
    )
    assert code == 0, out
    d = json.loads(out)
    assert d["rag"] is True and d["by_feature"]["rag_unsupported_rate/chi2"] >= 4


def test_the_dashboard_charts_the_rag_rates(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from calipers.web import create_app
    from tests.web.conftest import LOOPBACK

    path = tmp_path / "monitor.db"
    week(f"sqlite:///{path}")
    query = f"since={T0.isoformat()}&until={(T0 + 7 * DAY).isoformat()}&window=1d"
    with TestClient(create_app(str(path)), base_url=LOOPBACK) as client:
        page = client.get(f"/monitor?{query.replace('+', '%2B')}")
    assert page.status_code == 200, page.text
    html = page.text[page.text.index("<main>") :]
    for metric in ("rag_unsupported_rate", "rag_abstention_rate"):
        assert re.search(rf'<figure class="chart" data-metric="{metric}">', html), metric
    assert "RAG: answers no passage supports" in html
    assert 'data-feature="rag_unsupported_rate"' in html  # the alarm's row

"""Planted new-topic prompts that no suite covers are flagged, grouped, and exported; the
export round trip goes through the suites API (pool, build, load) and a review JSONL."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from calipers.monitor._export import export_to_review, export_to_suite
from calipers.monitor._novelty import Novelty, find_novelty
from calipers.monitor._synthetic import TOPICS, TrafficProfile, synthetic_traffic
from calipers.monitor._traffic import Exchange, pair_records
from calipers.monitor._vectors import Embedder
from calipers.suites import build_suite, import_logs, load_suite, read_pool
from tests.monitor._monitor_fixtures import HOUR, T0

COOK_ONLY = TrafficProfile(topics={"cooking": 1.0})


def exchanges(
    n: int, profile: TrafficProfile, seed: int, prefix: str, hour: int = 0
) -> list[Exchange]:
    rng = np.random.default_rng(seed)
    return pair_records(
        synthetic_traffic(
            n,
            start=T0 + hour * HOUR,
            end=T0 + (hour + 1) * HOUR,
            rng=rng,
            profile=profile,
            prefix=prefix,
        )
    )


def is_cooking(text: str) -> bool:
    return any(w in text.lower() for w in TOPICS["cooking"])


def make_suite(tmp_path: Path, name: str = "support") -> list[str]:
    """A suite built from ordinary (no cooking) traffic through the suites API."""
    ex = exchanges(60, TrafficProfile(), seed=11, prefix="s-")
    log = tmp_path / "support.jsonl"
    log.write_text(
        "".join(json.dumps({"id": e.pair_id, "question": e.prompt}) + "\n" for e in ex), "utf-8"
    )
    import_logs(log, name, fmt="jsonl")
    build_suite(name, seed=0, backend="tfidf")
    return [e.prompt for e in ex]


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Novelty, list[Exchange], list[Exchange]]:
    suite = make_suite(tmp_path)
    reference = exchanges(200, TrafficProfile(), seed=1, prefix="r-")
    usual = exchanges(100, TrafficProfile(), seed=2, prefix="u-", hour=1)
    cooking = exchanges(20, COOK_ONLY, seed=3, prefix="k-", hour=1)
    recent = sorted(usual + cooking, key=lambda e: e.ts)
    novelty = find_novelty(
        reference,
        recent,
        suite,
        embedder=Embedder("tfidf"),
        rng=np.random.default_rng(0),
        suites=["support"],
        quantile=0.05,
    )
    return novelty, usual, cooking


def test_planted_new_topic_is_flagged_and_clustered(
    planted: tuple[Novelty, list[Exchange], list[Exchange]],
) -> None:
    novelty, _usual, cooking = planted
    flagged = {it.exchange.pair_id for it in novelty.outliers}
    cook_ids = {e.pair_id for e in cooking}
    assert len(flagged & cook_ids) >= 19
    # ordinary prompts: flagged at about the quantile (5 of 100 expected; 3-SE margin)
    assert len(flagged - cook_ids) <= 5 + 3 * np.sqrt(100 * 0.05 * 0.95)
    big = max(novelty.clusters, key=lambda c: c.size)
    members = [it for it in novelty.outliers if it.cluster == big.id]
    assert big.size >= 15 and all(it.exchange.pair_id in cook_ids for it in members)
    assert any(w in big.name for w in TOPICS["cooking"])
    d = novelty.to_dict()
    assert d["n_outliers"] == len(novelty.outliers) and d["suites"] == ["support"]
    # the suites miss the cooking share (about 17%) and not much more
    assert 0.1 <= novelty.suite_uncovered.value <= 0.45


def test_export_to_suite_round_trip(
    planted: tuple[Novelty, list[Exchange], list[Exchange]],
) -> None:
    novelty, _usual, cooking = planted
    result = export_to_suite(novelty, "support", build=True, backend="tfidf")
    assert result.exported == len(novelty.outliers) and not result.skipped
    records, _reports = read_pool("support")
    pooled = {r.source.record_id for r in records}
    assert {it.exchange.pair_id for it in novelty.outliers} <= pooled
    manifest, items = load_suite("support")
    assert manifest.version == result.version == 2
    in_suite = {it.source.record_id for it in items}
    assert len(in_suite & {e.pair_id for e in cooking}) >= 19
    item = next(it for it in items if it.source.record_id == cooking[0].pair_id)
    assert item.query == cooking[0].prompt
    assert [t.role for t in item.turns] == ["system", "user"]  # the conversation is kept
    again = export_to_suite(novelty, "support")
    assert again.exported == 0
    assert again.skipped == {"already in the suite's pool": len(novelty.outliers)}


def test_export_to_review_round_trip(
    planted: tuple[Novelty, list[Exchange], list[Exchange]], tmp_path: Path
) -> None:
    novelty, _usual, _cooking = planted
    queue = tmp_path / "review" / "queue.jsonl"
    result = export_to_review(novelty, queue)
    rows = [json.loads(line) for line in queue.read_text("utf-8").splitlines()]
    assert result.exported == len(rows) == len(novelty.outliers)
    by_id = {it.exchange.pair_id: it for it in novelty.outliers}
    for row in rows:
        it = by_id[row["pair_id"]]
        assert row["prompt"] == it.exchange.prompt
        assert it.exchange.baseline is not None and it.exchange.candidate is not None
        assert row["baseline"]["response"] == it.exchange.baseline.response
        assert row["candidate"]["response"] == it.exchange.candidate.response
        assert row["why"].startswith(("an outlier", "a new cluster"))
        assert (row["cluster"] is None) == (it.cluster is None)
    again = export_to_review(novelty, queue)
    assert again.exported == 0 and again.skipped == {"already in the review queue": len(rows)}
    assert len(queue.read_text("utf-8").splitlines()) == len(rows)


def test_no_novelty_without_change() -> None:
    reference = exchanges(300, TrafficProfile(), seed=4, prefix="r-")
    recent = exchanges(200, TrafficProfile(), seed=5, prefix="n-", hour=1)
    novelty = find_novelty(
        reference,
        recent,
        [],
        embedder=Embedder("tfidf"),
        rng=np.random.default_rng(1),
        quantile=0.05,
    )
    # conformal: at most about 5% of ordinary traffic flagged (3-SE margin)
    assert len(novelty.outliers) <= 200 * 0.05 + 3 * np.sqrt(200 * 0.05 * 0.95)
    assert novelty.suite_uncovered.method == "skipped: no suite given"
    small = find_novelty(
        reference[:50],
        recent,
        [],
        embedder=Embedder("tfidf"),
        rng=np.random.default_rng(1),
        quantile=0.01,
    )
    assert small.outliers == [] and "cannot flag" in small.notes[0]
    assert timedelta(0) < recent[-1].ts - reference[0].ts

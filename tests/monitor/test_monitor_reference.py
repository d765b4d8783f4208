"""Windows inside the reference period are never tested against it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from calipers.monitor import MonitorConfig, TrafficProfile, monitor, synthetic_traffic
from calipers.store import Store

T0 = datetime(2025, 6, 2, tzinfo=UTC)


def test_windows_overlapping_the_reference_are_not_tested(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store.open(str(tmp_path / "m.db")) as store:
        for h in range(5):
            store.add_traffic(
                synthetic_traffic(
                    40,
                    start=T0 + timedelta(hours=h),
                    end=T0 + timedelta(hours=h + 1),
                    rng=rng,
                    profile=TrafficProfile(),
                    prefix=f"h{h}-",
                )
            )
        config = MonitorConfig(
            since=T0,
            until=T0 + timedelta(hours=5),
            reference=(T0, T0 + timedelta(hours=2, minutes=30)),
            embeddings="tfidf",
        )
        report = monitor(store, config)
    # windows 00:00, 01:00 and 02:00 overlap the reference (02:00-03:00 half of it)
    assert [w.start for w in report.drift] == [T0 + timedelta(hours=3), T0 + timedelta(hours=4)]
    assert any("3 window(s) overlapping the reference" in n for n in report.notes)
    assert len(report.windows) >= 5  # metrics are still shown for every window


def _hours(store: Store, counts: list[int], start: datetime, seed: int = 0) -> list[int]:
    """``counts[h]`` synthetic requests in hour ``h`` after ``start``; returns the counts."""
    rng = np.random.default_rng(seed)
    for h, n in enumerate(counts):
        if n:
            store.add_traffic(
                synthetic_traffic(
                    n,
                    start=start + timedelta(hours=h),
                    end=start + timedelta(hours=h + 1),
                    rng=rng,
                    profile=TrafficProfile(),
                    prefix=f"h{h}-",
                )
            )
    return counts


def test_default_view_starts_at_the_traffic_and_its_reference_holds_data(tmp_path: Path) -> None:
    """Traffic only in the last 6 of the 24 hours before now: the default view starts at
    the first hour with traffic (not 18 empty hours earlier), and the default reference is
    the first two hours (100 requests would do, but a quarter of the 600 is 150), so the 4
    later hours are tested."""
    now = T0 + timedelta(hours=24, minutes=30)
    first = T0 + timedelta(hours=18)
    with Store.open(str(tmp_path / "m.db")) as store:
        counts = _hours(store, [100] * 6, first)
        report = monitor(store, MonitorConfig(embeddings="tfidf", n_permutations=99), now=now)
    assert report.since == first and report.until == now
    assert report.reference == (first, first + timedelta(hours=2), counts[0] + counts[1])
    assert report.reference_problem is None and "default" in report.reference_why
    assert [w.start for w in report.drift] == [first + timedelta(hours=h) for h in range(2, 6)]


def test_default_reference_takes_windows_until_it_holds_enough(tmp_path: Path) -> None:
    """40 requests an hour, min_reference 100: the reference is the first three windows
    with traffic (120 requests, more than a quarter of 200; an empty hour before them is
    skipped); the rest is tested."""
    with Store.open(str(tmp_path / "m.db")) as store:
        counts = _hours(store, [0, 40, 40, 40, 40, 40], T0)
        report = monitor(
            store,
            MonitorConfig(
                since=T0, until=T0 + timedelta(hours=6), embeddings="tfidf", n_permutations=99
            ),
        )
    assert report.reference == (T0 + timedelta(hours=1), T0 + timedelta(hours=4), sum(counts[1:4]))
    assert [w.start for w in report.drift] == [T0 + timedelta(hours=h) for h in (4, 5)]
    d = report.to_dict()["reference"]
    assert d["n_requests"] == 120 and d["problem"] is None


def test_no_reference_with_traffic_is_said_plainly(tmp_path: Path) -> None:
    """All traffic in one window: nothing to compare it with. The report says so, names
    --reference, and runs no test (not a silent empty drift section)."""
    with Store.open(str(tmp_path / "m.db")) as store:
        _hours(store, [0, 0, 30], T0)
        report = monitor(
            store,
            MonitorConfig(
                since=T0, until=T0 + timedelta(hours=3), embeddings="tfidf", n_permutations=99
            ),
        )
        given = monitor(
            store,
            MonitorConfig(
                since=T0,
                until=T0 + timedelta(hours=3),
                embeddings="tfidf",
                n_permutations=99,
                reference=(T0 - timedelta(days=1), T0),
            ),
        )
    assert report.drift == [] and report.reference[2] == 0
    problem = report.reference_problem
    assert problem is not None and "30 requests fall in one window" in problem
    assert "--reference START..END" in problem
    assert report.to_dict()["reference"]["problem"] == problem
    assert given.drift == [] and given.reference_problem is not None
    assert "has no traffic" in given.reference_problem

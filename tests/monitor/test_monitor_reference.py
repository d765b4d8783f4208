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
            store.add_traffic(synthetic_traffic(
                40, start=T0 + timedelta(hours=h), end=T0 + timedelta(hours=h + 1), rng=rng,
                profile=TrafficProfile(), prefix=f"h{h}-"))
        config = MonitorConfig(since=T0, until=T0 + timedelta(hours=5),
                               reference=(T0, T0 + timedelta(hours=2, minutes=30)),
                               embeddings="tfidf")
        report = monitor(store, config)
    # windows 00:00, 01:00 and 02:00 overlap the reference (02:00-03:00 half of it)
    assert [w.start for w in report.drift] == [T0 + timedelta(hours=3), T0 + timedelta(hours=4)]
    assert any("3 window(s) overlapping the reference" in n for n in report.notes)
    assert len(report.windows) >= 5  # metrics are still shown for every window

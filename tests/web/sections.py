"""A stand-in for the monitoring page, plugged into the dashboard's Monitor slot by the tests:
windows of a synthetic latency feature, the share of slow requests per window (Wilson
interval), and a real two-sample KS drift test of each window against the first. ``?inject=K``
shifts every window from K on, which is drift the test must then see as alert markers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

import numpy as np

from calipers.stats import ks_drift, wilson
from calipers.store import Store
from calipers.web import SectionPage
from calipers.web._charts import Marker, Series, TimePoint, time_series_svg

WINDOWS, PER_WINDOW, SLOW_S = 8, 200, 1.5
START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def windows(inject: int | None, seed: int = 7) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for w in range(WINDOWS):
        x = rng.lognormal(mean=0.0, sigma=0.3, size=PER_WINDOW)
        if inject is not None and w >= inject:
            x = x * 1.8  # slower: drift
        out.append(x)
    return out


def drift_monitor(store: Store, params: Mapping[str, str]) -> SectionPage:
    inject = int(params["inject"]) if "inject" in params else None
    data = windows(inject)
    times = [START + timedelta(hours=w) for w in range(WINDOWS)]
    share = [wilson(int((x > SLOW_S).sum()), x.size) for x in data]
    tests = [ks_drift(data[0], x, alpha=0.001) for x in data[1:]]
    markers = [Marker(t, f"drift: latency (KS p={d.p_value:.1g})")
               for t, d in zip(times[1:], tests, strict=True) if d.drifted]
    chart = time_series_svg(
        [Series("share of slow requests", [TimePoint(t, e) for t, e in zip(times, share,
                                                                          strict=True)])],
        title="share of requests slower than 1.5 s", markers=markers)
    alerts = [m.label for m in markers]
    return SectionPage("section_generic.html.j2",
                       {"alerts": alerts, "notes": [], "charts": [chart], "tables": []},
                       {"alerts": alerts, "windows": [e.to_dict() for e in share]})

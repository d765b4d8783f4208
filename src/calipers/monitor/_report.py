"""``calipers monitor`` as one function: windows of metrics, drift per window against a
reference period, and the recent traffic nothing covers. :func:`monitor` returns a
:class:`MonitorReport` whose ``to_dict()`` is what ``--json`` prints and the web UI charts.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calipers._util.clock import utc_now
from calipers.monitor._drift import DriftOptions, WindowDrift, drift_tests
from calipers.monitor._features import extract_features
from calipers.monitor._language import language_detector
from calipers.monitor._novelty import Novelty, find_novelty
from calipers.monitor._scores import ScoreIndex, load_scores
from calipers.monitor._suites import suite_texts
from calipers.monitor._traffic import Exchange, load_exchanges
from calipers.monitor._vectors import Embedder
from calipers.monitor._when import floor_time, window_edges
from calipers.monitor._windows import ARMS, Prices, arm_metrics, arm_record, metrics_to_dict
from calipers.store import Store
from calipers.types import Estimate

__all__ = ["MonitorConfig", "MonitorReport", "WindowMetrics", "monitor"]


class MonitorConfig(BaseModel):
    """What to monitor and how. ``since``/``until`` default to the 24 hours before now (the
    start rounded down to a whole window); ``reference`` defaults to the first window."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: datetime | None = None
    until: datetime | None = None
    window: timedelta = timedelta(hours=1)
    reference: tuple[datetime, datetime] | None = None
    alpha: float = Field(0.05, gt=0.0, lt=1.0)
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)
    suites: list[str] = Field(default_factory=list)
    embeddings: Literal["auto", "tfidf", "sentence-transformers"] = "auto"
    embedding_test: Literal["mmd", "classifier"] = "mmd"
    latest_only: bool = False
    novelty: Literal["latest", "all"] = "latest"
    modes: list[str] | None = None
    outlier_quantile: float = Field(0.01, gt=0.0, lt=1.0)
    min_cluster: int = Field(3, ge=2)
    n_permutations: int = Field(1000, ge=99)
    seed: int = 0


@dataclass(frozen=True)
class WindowMetrics:
    start: datetime
    end: datetime
    n_requests: int
    arms: dict[str, dict[str, Estimate]]

    def to_dict(self) -> dict[str, Any]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat(),
                "n_requests": self.n_requests,
                "arms": {a: metrics_to_dict(m) for a, m in self.arms.items()}}


@dataclass(frozen=True)
class MonitorReport:
    since: datetime
    until: datetime
    window: timedelta
    alpha: float
    reference: tuple[datetime, datetime, int]
    windows: list[WindowMetrics]
    drift: list[WindowDrift]
    novelty: Novelty | None
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def alarms(self) -> list[tuple[WindowDrift, int]]:
        """``(window, number of alarms)`` for each window that raised any."""
        return [(w, len(w.alarms)) for w in self.drift if w.alarms]

    def to_dict(self) -> dict[str, Any]:
        start, end, n = self.reference
        return {
            "since": self.since.isoformat(), "until": self.until.isoformat(),
            "window_seconds": self.window.total_seconds(), "alpha": self.alpha,
            "reference": {"start": start.isoformat(), "end": end.isoformat(), "n_requests": n},
            "settings": self.settings, "notes": self.notes,
            "windows": [w.to_dict() for w in self.windows],
            "drift": [w.to_dict() for w in self.drift],
            "n_drifted_windows": len(self.alarms),
            "novelty": self.novelty.to_dict() if self.novelty is not None else None,
        }


def _span(c: MonitorConfig, now: datetime) -> tuple[datetime, datetime]:
    until = c.until or now
    since = c.since or floor_time(until - timedelta(hours=24), c.window)
    return since, until


def _split(exchanges: Sequence[Exchange], edges: Sequence[tuple[datetime, datetime]]
           ) -> list[list[Exchange]]:
    times = [e.ts for e in exchanges]
    return [list(exchanges[bisect.bisect_left(times, a):bisect.bisect_left(times, b)])
            for a, b in edges]


def _arms(groups: list[list[Exchange]]) -> list[str]:
    """The arms with any call; ``served`` is left out when one arm served every request
    (shadow mode: it would repeat the baseline's row)."""
    arms = [a for a in ARMS if any(arm_record(e, a) is not None for g in groups for e in g)]
    roles = {e.served.role if e.served is not None else None for g in groups for e in g}
    if len(roles) == 1 and None not in roles and len(arms) > 1:
        arms.remove("served")
    return arms or ["served"]


def _metrics(groups: list[list[Exchange]], edges: Sequence[tuple[datetime, datetime]],
             c: MonitorConfig, scores: ScoreIndex, rng: np.random.Generator
             ) -> list[WindowMetrics]:
    arms = _arms(groups)
    prices = {k: Prices(*v) for k, v in c.prices.items()}
    out = []
    for (a, b), group in zip(edges, groups, strict=True):
        per_arm = {arm: arm_metrics(group, arm, prices=prices, scores=scores, rng=rng,
                                    confidence=c.confidence) for arm in arms}
        out.append(WindowMetrics(a, b, len(group), per_arm))
    return out


def _reference(store: Store, c: MonitorConfig, groups: list[list[Exchange]],
               edges: Sequence[tuple[datetime, datetime]]
               ) -> tuple[tuple[datetime, datetime], list[Exchange], int]:
    """The reference period, its requests, and the index of the first window compared."""
    if c.reference is not None:
        return c.reference, load_exchanges(store, since=c.reference[0], until=c.reference[1],
                                           modes=c.modes), 0
    return edges[0], groups[0], 1


def monitor(store: Store, config: MonitorConfig | None = None, *,
            now: datetime | None = None) -> MonitorReport:
    """Metrics per window, drift of each later window (or the latest) against the reference,
    and outliers / new clusters of the recent traffic against the reference and suites."""
    c = config or MonitorConfig()
    since, until = _span(c, now or utc_now())
    edges = window_edges(since, until, c.window)
    exchanges = load_exchanges(store, since=since, until=until, modes=c.modes)
    groups = _split(exchanges, edges)
    rng = np.random.default_rng(c.seed)
    scores = load_scores(store, since=min(since, c.reference[0]) if c.reference else since,
                         until=max(until, c.reference[1]) if c.reference else until)
    windows = _metrics(groups, edges, c, scores, rng)
    (ref_a, ref_b), ref_ex, first = _reference(store, c, groups, edges)
    detect, detector = language_detector()
    embedder = Embedder(c.embeddings, seed=c.seed)
    notes = [] if scores.note is None else [f"online scores: {scores.note}"]
    drift = _drift(ref_ex, (ref_a, ref_b), groups, edges, first, c, scores, detect, embedder,
                   rng, notes)
    later = [g for g in groups[first:] if g]
    recent = [e for g in (later if c.novelty == "all" else later[-1:]) for e in g]
    texts, suite_notes = suite_texts(c.suites)
    novelty = find_novelty(ref_ex, recent, texts, embedder=embedder, rng=rng, suites=c.suites,
                           quantile=c.outlier_quantile, min_cluster=c.min_cluster)
    notes += suite_notes
    settings = _settings(c, detector, embedder, len(drift))
    return MonitorReport(since, until, c.window, c.alpha, (ref_a, ref_b, len(ref_ex)), windows,
                         drift, novelty, settings, notes)


def _drift(ref_ex: list[Exchange], ref_span: tuple[datetime, datetime],
           groups: list[list[Exchange]],
           edges: Sequence[tuple[datetime, datetime]], first: int, c: MonitorConfig,
           scores: ScoreIndex, detect: Any, embedder: Embedder, rng: np.random.Generator,
           notes: list[str]) -> list[WindowDrift]:
    if not ref_ex:
        notes.append("the reference period has no traffic: no drift tests")
        return []
    options = DriftOptions(alpha=c.alpha, embedding_test=c.embedding_test,
                           n_permutations=c.n_permutations)
    ref = extract_features(ref_ex, scores, detect)
    todo = range(len(groups) - 1, len(groups)) if c.latest_only else range(first, len(groups))
    out, inside = [], 0
    for i in todo:
        if not groups[i]:
            continue
        if edges[i][0] < ref_span[1] and edges[i][1] > ref_span[0]:
            inside += 1  # its requests are (part of) the reference: no test against itself
            continue
        rows = drift_tests(ref, extract_features(groups[i], scores, detect),
                           embedder=embedder, rng=rng, options=options)
        out.append(WindowDrift(edges[i][0], edges[i][1], tuple(rows)))
    if inside:
        notes.append(f"{inside} window(s) overlapping the reference period not tested for "
                     "drift (they are part of the reference)")
    return out


def _settings(c: MonitorConfig, detector: str, embedder: Embedder, n_tested: int
              ) -> dict[str, Any]:
    return {
        "language_detector": detector, "embeddings": embedder.name,
        "embedding_test": c.embedding_test, "n_permutations": c.n_permutations,
        "confidence": c.confidence, "seed": c.seed, "modes": c.modes, "suites": c.suites,
        "prices_per_million_tokens": {k: {"input": v[0], "output": v[1]}
                                      for k, v in c.prices.items()},
        "multiplicity": (f"alpha {c.alpha:g} per window: the tests of one window are "
                         f"Holm-corrected together, windows are not corrected for each "
                         f"other; over {n_tested} windows without drift expect about "
                         f"{n_tested * c.alpha:.1f} with a false alarm"),
    }

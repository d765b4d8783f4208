"""``calipers monitor`` as one function: windows of metrics, drift per window against a
reference period, and the recent traffic nothing covers. :func:`monitor` returns a
:class:`MonitorReport` whose ``to_dict()`` is what ``--json`` prints and the web UI charts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calipers._util.clock import utc_now
from calipers._util.parallel import parallel_map
from calipers.monitor._drift import DriftOptions, WindowDrift, drift_tests
from calipers.monitor._features import extract_features
from calipers.monitor._fingerprint import FingerprintCanaryStatus, fingerprint_canaries
from calipers.monitor._language import language_detector
from calipers.monitor._novelty import Novelty, find_novelty
from calipers.monitor._rag import carries_rag, rag_metrics, rag_note
from calipers.monitor._scores import ScoreIndex, load_scores
from calipers.monitor._suites import suite_texts
from calipers.monitor._traffic import Exchange
from calipers.monitor._vectors import Embedder
from calipers.monitor._when import floor_time, window_edges
from calipers.monitor._window_data import WindowData, load_span, load_windows, sample_note
from calipers.monitor._windows import ARMS, Prices, arm_metrics, counted_metrics, metrics_to_dict
from calipers.store import Store
from calipers.types import Estimate

__all__ = ["MonitorConfig", "MonitorReport", "WindowMetrics", "monitor"]


class MonitorConfig(BaseModel):
    """What to monitor and how. ``until`` defaults to now and ``since`` to the first window
    with traffic in the 24 hours before ``until`` (rounded down to a whole window).
    ``reference`` defaults to the first windows with traffic, enough of them to hold
    ``min_reference`` requests and a quarter of all requests (never the last window with
    traffic, which is then tested);
    when the traffic fills fewer than two windows no reference holds data, and the report
    says so."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: datetime | None = None
    until: datetime | None = None
    window: timedelta = timedelta(hours=1)
    reference: tuple[datetime, datetime] | None = None
    min_reference: int = Field(100, ge=1)
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
    sample: int = Field(150, ge=10)
    """Requests per window read whole (refusals, RAG, cost, online scores, drift, novelty);
    a window with more is summarised by a uniform sample of this many (the report says so)."""
    reference_sample: int = Field(500, ge=10)
    """The same for the reference period."""
    max_latencies: int = Field(2000, ge=100)
    """Answered calls per window and arm whose latencies are read; beyond, a sample."""


@dataclass(frozen=True)
class WindowMetrics:
    start: datetime
    end: datetime
    n_requests: int
    arms: dict[str, dict[str, Estimate]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "n_requests": self.n_requests,
            "arms": {a: metrics_to_dict(m) for a, m in self.arms.items()},
        }


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
    reference_why: str = ""
    reference_problem: str | None = None  # no reference holds traffic: why, and what to do
    fingerprint: list[FingerprintCanaryStatus] = field(default_factory=list)
    """The fingerprint canaries' standing (``docs/fingerprint-canary.md``): all looks so far,
    whatever the period."""

    @property
    def alarms(self) -> list[tuple[WindowDrift, int]]:
        """``(window, number of alarms)`` for each window that raised any."""
        return [(w, len(w.alarms)) for w in self.drift if w.alarms]

    def to_dict(self) -> dict[str, Any]:
        start, end, n = self.reference
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "window_seconds": self.window.total_seconds(),
            "alpha": self.alpha,
            "reference": {
                "start": start.isoformat(),
                "end": end.isoformat(),
                "n_requests": n,
                "why": self.reference_why,
                "problem": self.reference_problem,
            },
            "settings": self.settings,
            "notes": self.notes,
            "windows": [w.to_dict() for w in self.windows],
            "drift": [w.to_dict() for w in self.drift],
            "n_drifted_windows": len(self.alarms),
            "novelty": self.novelty.to_dict() if self.novelty is not None else None,
            "fingerprint_canaries": [f.to_dict() for f in self.fingerprint],
            "n_changed_fingerprints": sum(f.alarm for f in self.fingerprint),
        }


def _span(store: Store, c: MonitorConfig, now: datetime) -> tuple[datetime, datetime]:
    """``since`` and ``until``. Without ``since``: from the first window with traffic in the
    24 hours before ``until``, so the view is not mostly empty."""
    until = c.until or now
    since = c.since or floor_time(until - timedelta(hours=24), c.window)
    if c.since is None:
        first = store.first_traffic(since=since, until=until, modes=c.modes)
        if first is not None:
            since = max(since, floor_time(first, c.window))
    return since, until


def _arms(windows: list[WindowData]) -> list[str]:
    """The arms with any call; ``served`` is left out when one arm served every request
    (shadow mode: it would repeat the baseline's row)."""
    arms = [a for a in ARMS if any(w.counts.calls.get(a, 0) for w in windows)]
    roles = {r for w in windows for r in w.counts.served_roles}
    unserved = any(w.counts.calls.get("served", 0) < w.n for w in windows)
    if len(roles) == 1 and not unserved and len(arms) > 1:
        arms.remove("served")
    return arms or ["served"]


def _sampled(metrics: dict[str, Estimate], w: WindowData) -> dict[str, Estimate]:
    if not w.sampled:
        return metrics
    note = f"sample of {len(w.exchanges):,} of {w.n:,} requests"
    return {  # a metric skipped (no prices, no scores) says only why
        k: e if e.method.startswith("skipped") else replace(e, method=f"{e.method}; {note}")
        for k, e in metrics.items()
    }


def _metrics(
    windows: list[WindowData],
    c: MonitorConfig,
    scores: ScoreIndex,
    rng: np.random.Generator,
) -> list[WindowMetrics]:
    arms = _arms(windows)
    prices = {k: Prices(*v) for k, v in c.prices.items()}
    rag = any(carries_rag(e) for w in windows for e in w.exchanges)
    lat_note = f"sample of about {c.max_latencies:,} answered calls"
    out = []
    for w in windows:
        per_arm = {}
        for arm in arms:
            read = {
                **arm_metrics(
                    w.exchanges, arm, prices=prices, scores=scores, rng=rng, confidence=c.confidence
                ),
                **(rag_metrics(w.exchanges, arm, c.confidence) if rag else {}),
            }
            counted = counted_metrics(
                w.counts.calls.get(arm, 0),
                w.counts.failed(arm),
                w.latencies.get(arm, np.zeros(0)),
                confidence=c.confidence,
                latency_sample=lat_note if w.latencies_sampled else "",
            )
            per_arm[arm] = {**_sampled(read, w), **counted}
            per_arm[arm] = {k: per_arm[arm][k] for k in read}  # the metrics' order, as read
        out.append(WindowMetrics(w.start, w.end, w.n, per_arm))
    return out


@dataclass(frozen=True)
class _Reference:
    span: tuple[datetime, datetime]
    exchanges: list[Exchange]
    first: int  # the first window compared with it
    why: str
    problem: str | None = None  # set when no reference holds traffic: why, and what to do
    n: int = 0  # its requests (``exchanges`` may be a sample of them)


def _reference(store: Store, c: MonitorConfig, windows: list[WindowData]) -> _Reference:
    """The reference period: the one given, else the first windows with traffic until they
    hold ``min_reference`` requests and a quarter of all requests (a reference shared by
    every window should not be one hour's luck), leaving the last window with traffic to
    be tested. Read whole up to ``reference_sample`` requests, else a uniform sample."""
    if c.reference is not None:
        ex, n = load_span(
            store, *c.reference, modes=c.modes, sample=c.reference_sample, seed=c.seed
        )
        problem = (
            None
            if ex
            else (
                f"the reference period {_hm(c.reference[0])} .. {_hm(c.reference[1])} has no "
                "traffic: no drift test ran. Set --reference START..END to a period with traffic."
            )
        )
        return _Reference(c.reference, ex, 0, "given (--reference)", problem, n)
    filled = [i for i, w in enumerate(windows) if w.n]
    if len(filled) < 2:
        n = sum(w.n for w in windows)
        where = (
            f"all {n:,} requests fall in one window ({_hm(windows[filled[0]].start)})"
            if filled
            else "no traffic in this period"
        )
        return _Reference(
            (windows[0].start, windows[0].end),
            [],
            1,
            "none",
            (
                f"No reference period holds traffic to compare with: {where}, and the default "
                "reference is the first windows with traffic, before the last one. No drift test "
                "ran. Set one with --reference START..END (a period with traffic, e.g. the day "
                "before), or use a narrower --window."
            ),
        )
    end, n, total = filled[0], 0, sum(w.n for w in windows)
    for i in range(filled[0], filled[-1]):
        end, n = i, n + windows[i].n
        if n >= c.min_reference and 4 * n >= total:
            break
    span = (windows[filled[0]].start, windows[end].end)
    why = (
        f"default: the first window{'s' if end > filled[0] else ''} with traffic, until "
        f"{c.min_reference:,} requests and a quarter of all, or the last window with "
        "traffic (set --reference to choose)"
    )
    inside = windows[filled[0] : end + 1]
    if n <= c.reference_sample and not any(w.sampled for w in inside):
        ex = [e for w in inside for e in w.exchanges]
    else:
        ex = load_span(store, *span, modes=c.modes, sample=c.reference_sample, seed=c.seed, n=n)[0]
    return _Reference(span, ex, end + 1, why, None, n)


def _hm(t: datetime) -> str:
    return f"{t:%Y-%m-%d %H:%M}"


def monitor(
    store: Store, config: MonitorConfig | None = None, *, now: datetime | None = None
) -> MonitorReport:
    """Metrics per window, drift of each later window (or the latest) against the reference,
    and outliers / new clusters of the recent traffic against the reference and suites."""
    c = config or MonitorConfig()
    since, until = _span(store, c, now or utc_now())
    edges = window_edges(since, until, c.window)
    windows = load_windows(
        store,
        edges,
        modes=c.modes,
        sample=c.sample,
        max_latencies=c.max_latencies,
        seed=c.seed,
    )
    rng = np.random.default_rng(c.seed)
    ref = _reference(store, c, windows)
    read = [e.pair_id for w in windows for e in w.exchanges] + [e.pair_id for e in ref.exchanges]
    scores = load_scores(store, pair_ids=read)
    metrics = _metrics(windows, c, scores, rng)
    detect, detector = language_detector()
    embedder = Embedder(c.embeddings, seed=c.seed)
    notes = [] if scores.note is None else [f"online scores: {scores.note}"]
    rag = rag_note([e for w in windows for e in w.exchanges])
    if rag is not None and any(w.sampled for w in windows):
        rag += " (counted in the requests read: windows' samples)"
    notes += [] if rag is None else [rag]
    sampled = sample_note(windows, c.sample, c.max_latencies)
    notes += [] if sampled is None else [sampled]
    if len(ref.exchanges) < ref.n:
        notes.append(
            f"sampled: the reference's drift and novelty features use a uniform sample of "
            f"{len(ref.exchanges):,} of its {ref.n:,} requests"
        )
    drift = _drift(ref, windows, c, scores, detect, embedder, notes)
    later = [w for w in windows[ref.first :] if w.n]
    recent = [e for w in (later if c.novelty == "all" else later[-1:]) for e in w.exchanges]
    texts, suite_notes = suite_texts(c.suites)
    novelty = find_novelty(
        ref.exchanges,
        recent,
        texts,
        embedder=embedder,
        rng=rng,
        suites=c.suites,
        quantile=c.outlier_quantile,
        min_cluster=c.min_cluster,
    )
    n_recent = sum(w.n for w in (later if c.novelty == "all" else later[-1:]))
    if len(recent) < n_recent:
        novelty.notes.append(
            f"sampled: outliers searched among a uniform sample of {len(recent):,} of the "
            f"{n_recent:,} recent requests"
        )
    notes += suite_notes
    settings = _settings(c, detector, embedder, len(drift))
    return MonitorReport(
        since,
        until,
        c.window,
        c.alpha,
        (*ref.span, ref.n),
        metrics,
        drift,
        novelty,
        settings,
        notes,
        ref.why,
        ref.problem,
        fingerprint_canaries(store),
    )


def _window_rng(seed: int, w: WindowData) -> np.random.Generator:
    """The generator of one window's drift tests: from the seed and the window's start, so a
    window's tests draw the same permutations whichever span is shown, and windows can be
    tested at once."""
    return np.random.default_rng([seed, int(w.start.timestamp()) % 2**63])


def _drift(
    ref: _Reference,
    windows: list[WindowData],
    c: MonitorConfig,
    scores: ScoreIndex,
    detect: Any,
    embedder: Embedder,
    notes: list[str],
) -> list[WindowDrift]:
    if not ref.exchanges:
        return []
    options = DriftOptions(
        alpha=c.alpha, embedding_test=c.embedding_test, n_permutations=c.n_permutations
    )
    features = extract_features(ref.exchanges, scores, detect)
    todo = (
        range(len(windows) - 1, len(windows)) if c.latest_only else range(ref.first, len(windows))
    )
    tested, inside = [], 0
    for i in todo:
        w = windows[i]
        if not w.n:
            continue
        if w.start < ref.span[1] and w.end > ref.span[0]:
            inside += 1  # its requests are (part of) the reference: no test against itself
            continue
        tested.append(w)

    def test(w: WindowData) -> WindowDrift:
        rows = drift_tests(
            features,
            extract_features(w.exchanges, scores, detect),
            embedder=embedder,
            rng=_window_rng(c.seed, w),
            options=options,
        )
        sample = (len(w.exchanges), w.n) if w.sampled else None
        return WindowDrift(w.start, w.end, tuple(rows), sample)

    out = parallel_map(test, tested, one_blas_thread=True)
    if inside:
        notes.append(
            f"{inside} window(s) overlapping the reference period not tested for "
            "drift (they are part of the reference)"
        )
    return out


def _settings(c: MonitorConfig, detector: str, embedder: Embedder, n_tested: int) -> dict[str, Any]:
    return {
        "language_detector": detector,
        "embeddings": embedder.name,
        "embedding_test": c.embedding_test,
        "n_permutations": c.n_permutations,
        "confidence": c.confidence,
        "seed": c.seed,
        "sample": c.sample,
        "reference_sample": c.reference_sample,
        "max_latencies": c.max_latencies,
        "modes": c.modes,
        "suites": c.suites,
        "prices_per_million_tokens": {
            k: {"input": v[0], "output": v[1]} for k, v in c.prices.items()
        },
        "multiplicity": (
            f"alpha {c.alpha:g} per window: the tests of one window are "
            f"Holm-corrected together, windows are not corrected for each "
            f"other; over {n_tested} windows without drift expect about "
            f"{n_tested * c.alpha:.1f} with a false alarm"
        ),
    }

"""``calipers ab``: is the candidate better on real traffic, and is it safe to ship?

Reads the gateway's log for a time window, scores a sample with the chosen scorers (stored,
so the next look reuses them), and tests with always-valid confidence sequences (mSPRT):
shadow traffic paired on the same requests, canary traffic between the user groups. The
primary metric must improve; the guardrails (error rate, latency p50 and p95, refusal rate,
cost per request) must not get worse beyond their tolerances. The answer is promote, keep
watching or roll back, with the evidence. See ``docs/ab.md``.

Alpha is split so that a wrong call, in either direction, has probability at most ``alpha``
at any number of looks: ``alpha/2`` for the primary metric and ``alpha/2`` shared equally by
the guardrails in use (secondary scores are shown at ``alpha/2`` and decide nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from calipers.errors import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, ConfigError, DataError
from calipers.monitor._ab_build import (
    Built,
    Settings,
    build_guardrail,
    build_score_metric,
    prepare_guardrail,
)
from calipers.monitor._ab_metrics import (
    MetricPath,
    crossed_at,
    decide_at,
    effect_at,
    guardrail_status,
)
from calipers.monitor._online import (
    Progress,
    ScoringReport,
    parse_scorer,
    sample_exchanges,
    score_exchanges,
)
from calipers.monitor._traffic import Exchange, load_exchanges
from calipers.stats import Decision
from calipers.store import OnlineScoreRecord, Store
from calipers.types import Estimate

__all__ = [
    "DEFAULT_TOLERANCES",
    "GUARDRAILS",
    "ABConfig",
    "ABResult",
    "MetricResult",
    "Price",
    "analyze_ab",
    "run_ab",
]

GUARDRAILS = ("error_rate", "latency_p50", "latency_p95", "refusal_rate", "cost")
DEFAULT_TOLERANCES: dict[str, float] = {
    "error_rate": 0.01,
    "latency_p50": 0.10,
    "latency_p95": 0.03,
    "refusal_rate": 0.02,
    "cost": 0.10,
}
REFUSAL = "refusal"
EXIT_CODES = {"promote": EXIT_PASS, "roll_back": EXIT_FAIL, "keep_watching": EXIT_INCONCLUSIVE}
_PATH_POINTS = 200


class Price(BaseModel):
    """USD per million input and output tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class ABConfig(BaseModel):
    """What ``calipers ab`` analyses and how. ``tolerances`` override
    :data:`DEFAULT_TOLERANCES` (``cost`` and ``latency_p50`` are relative: 0.10 = 10%)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["shadow", "canary"] | None = None
    since: datetime | None = None
    until: datetime | None = None
    scorers: tuple[str, ...] = ()
    keys: tuple[str, ...] | None = None
    """Stored score keys to analyse (first = primary) instead of the keys of ``scorers``: any
    stored key reads back (rubric files, hashed arguments) and nothing needs building."""
    judge_model: str | None = None
    sample: int | None = Field(default=None, ge=1)
    seed: int = 0
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min_improvement: float = Field(default=0.0, ge=0)
    max_n: int | None = Field(default=None, ge=1)
    prices: dict[Literal["baseline", "candidate"], Price] = Field(default_factory=dict)
    tolerances: dict[str, float] = Field(default_factory=dict)
    min_n: int = Field(default=100, ge=2)
    n_target: int = Field(default=1000, ge=1)
    concurrency: int = Field(default=8, ge=1)
    score: bool = True
    retry_failed: bool = False

    @field_validator("tolerances")
    @classmethod
    def _known(cls, v: dict[str, float]) -> dict[str, float]:
        for name, tol in v.items():
            if name not in GUARDRAILS:
                raise ValueError(f"unknown guardrail {name!r}; known: {', '.join(GUARDRAILS)}")
            if not (math.isfinite(tol) and tol >= 0):
                raise ValueError(f"guardrail {name}: tolerance must be >= 0, got {tol!r}")
        return v


def _clean(x: float) -> float | None:
    return None if math.isnan(x) or math.isinf(x) else x


def _est(e: Estimate) -> dict[str, Any]:
    return {k: (_clean(v) if isinstance(v, float) else v) for k, v in e.to_dict().items()}


_POINT_METRICS = ("error_rate", "refusal_rate", "latency_p95", "latency_p50")


@dataclass(frozen=True)
class MetricResult:
    """One metric: candidate minus baseline with its confidence sequence (``effect``), the
    always-valid p-value of "no difference", and for a guardrail its tolerance and status:
    ``failing`` (worse than the tolerance for sure: the decision is roll back), ``safe``,
    ``open`` or ``moved`` (the sequence became empty without showing harm); a primary or
    secondary score is ``better``, ``worse``, ``open`` or ``moved``. A metric without data is
    ``skipped`` with the reason. ``reason`` says the status in words; ``crossed`` holds the
    bounds that crossed when the sequence is empty (``effect`` then has none)."""

    name: str
    what: str
    effect: Estimate
    p_value: float
    higher_is_better: bool
    tolerance: float | None = None
    status: str = "open"
    skipped: str | None = None
    tolerance_text: str | None = None
    reason: str | None = None
    crossed: tuple[float, float] | None = None

    @property
    def uncalibrated(self) -> bool:
        """A model judge's online score: no calibration against people is on record."""
        return self.name.startswith("llm_judge")

    def to_dict(self) -> dict[str, Any]:
        crossed = (
            None
            if self.crossed is None
            else {"low": _clean(self.crossed[0]), "high": _clean(self.crossed[1])}
        )
        return {
            "name": self.name,
            "what": self.what,
            "effect": _est(self.effect),
            "p_value": _clean(self.p_value),
            "higher_is_better": self.higher_is_better,
            "tolerance": self.tolerance,
            "tolerance_text": self.tolerance_text,
            "status": self.status,
            "skipped": self.skipped,
            "reason": self.reason,
            "crossed": crossed,
            "uncalibrated": self.uncalibrated,
        }

    def effect_text(self) -> str:
        """The effect with its confidence sequence, as ``calipers ab`` and the dashboard show
        it: rates in points, ``latency_p50`` in percent; an empty sequence shows the bounds
        that crossed."""
        e = self.effect
        if self.skipped or e.is_empty:
            return "n/a"
        if self.name in _POINT_METRICS:
            scale, unit, fmt = 100.0, "%" if self.name == "latency_p50" else " pts", "+.2f"
        else:
            scale, unit, fmt = 1.0, " $/1k req" if self.name == "cost" else "", "+.4g"

        def f(x: float) -> str:
            return ("−∞" if x < 0 else "+∞") if math.isinf(x) else format(scale * x, fmt)

        if self.crossed is not None:
            low, high = self.crossed
            return f"{f(e.value)} empty: ≥{f(low)} and ≤{f(high)}{unit}"
        return f"{f(e.value)} [{f(e.low)}, {f(e.high)}]{unit}"


@dataclass(frozen=True)
class ABResult:
    """The decision and its evidence; ``to_dict()`` is JSON-able (no NaN or infinity:
    null). ``path`` is the primary metric's estimate and confidence sequence as the
    observations arrived (up to 200 points, for a chart)."""

    decision: Decision
    mode: str
    alpha: float
    primary: MetricResult | None
    guardrails: tuple[MetricResult, ...]
    secondary: tuple[MetricResult, ...]
    counts: dict[str, int]
    first_ts: datetime | None
    last_ts: datetime | None
    since: datetime | None
    until: datetime | None
    path: tuple[dict[str, Any], ...] = ()
    scoring: tuple[ScoringReport, ...] = ()

    @property
    def action(self) -> str:
        return self.decision.action

    @property
    def exit_code(self) -> int:
        """0 promote, 1 roll back, 2 keep watching (as ``calipers gate``)."""
        return EXIT_CODES[self.decision.action]

    def to_dict(self) -> dict[str, Any]:
        def iso(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat()

        return {
            "decision": self.decision.action,
            "reasons": list(self.decision.reasons),
            "mode": self.mode,
            "alpha": self.alpha,
            "primary": None if self.primary is None else self.primary.to_dict(),
            "guardrails": [g.to_dict() for g in self.guardrails],
            "secondary": [s.to_dict() for s in self.secondary],
            "counts": dict(self.counts),
            "span": {
                "since": iso(self.since),
                "until": iso(self.until),
                "first": iso(self.first_ts),
                "last": iso(self.last_ts),
            },
            "path": list(self.path),
            "scoring": [s.to_dict() for s in self.scoring],
        }


# -- the window ---------------------------------------------------------------------------------


def _window(store: Store, cfg: ABConfig) -> tuple[str, list[Exchange], dict[str, int]]:
    """The requests of the window in the A/B mode, and what was left out and why."""
    exchanges = load_exchanges(store, since=cfg.since, until=cfg.until)
    by_mode = {m: sum(e.mode == m for e in exchanges) for m in ("shadow", "canary", "off")}
    span = f"between {cfg.since or 'the start'} and {cfg.until or 'now'}"
    if not exchanges:
        raise DataError(
            f"No gateway traffic is logged {span}.",
            hint="Run `calipers gateway --mode shadow|canary` in front of the "
            "models, or widen --since/--until.",
        )
    mode: str | None = cfg.mode
    if mode is None:
        present = [m for m in ("shadow", "canary") if by_mode[m]]
        if not present:
            raise DataError(
                f"All {len(exchanges)} requests logged {span} were made in mode "
                "off: nothing went to the candidate.",
                hint="Start the gateway with --mode shadow or --mode canary.",
            )
        if len(present) == 2:
            raise ConfigError(
                f"The window holds shadow ({by_mode['shadow']}) and canary "
                f"({by_mode['canary']}) requests: they answer different questions and are "
                "not mixed.",
                hint="Pass --mode shadow or --mode canary, or set --since to "
                "when the gateway's mode changed.",
            )
        mode = present[0]
    used = [e for e in exchanges if e.mode == mode]
    counts = {"requests": len(exchanges), "other_mode": len(exchanges) - len(used)}
    if mode == "shadow":
        kept = [e for e in used if e.paired]
        counts["not_mirrored"] = len(used) - len(kept)
        if not kept:
            raise DataError(
                f"None of the {len(used)} shadow requests logged {span} has a "
                "candidate answer: no pairs to compare.",
                hint="Raise the gateway's --fraction, or check /calipers/stats "
                "for dropped copies and an open circuit breaker.",
            )
    else:
        kept = [e for e in used if e.user_key_hash is not None]
        counts["no_user_key"] = len(used) - len(kept)
        if not kept:
            raise DataError(
                f"No canary request logged {span} has a user key, so none was "
                "assigned to a group at random.",
                hint="Send X-Calipers-User (or the body's user field).",
            )
    counts["used"] = len(kept)
    counts["baseline"] = sum(e.baseline is not None for e in kept)
    counts["candidate"] = sum(e.candidate is not None for e in kept)
    counts["breaker_open"] = sum(e.candidate is not None and e.candidate.breaker_open for e in kept)
    return mode, kept, counts


def _scores(
    store: Store, key: str, exchanges: Sequence[Exchange]
) -> dict[tuple[str, str], OnlineScoreRecord]:
    got = store.get_online_scores(scorer=key, pair_ids=[e.pair_id for e in exchanges])
    return {(r.pair_id, r.role): r for r in got}


# -- metrics to results -------------------------------------------------------------------------


def _tolerance_text(name: str, given: float, used: float) -> str:
    pct = f"{100 * given:g}"
    return {
        "error_rate": f"+{pct} points",
        "refusal_rate": f"+{pct} points",
        "latency_p50": f"+{pct}% typical latency",
        "latency_p95": f"+{pct} points of answers over the baseline's p95",
        "cost": f"+{pct}% of the baseline's cost"
        + ("" if math.isnan(used) else f" (${used:.3g} per 1,000 requests)"),
    }[name]


def _result(
    name: str, built: Built, what: str, higher: bool, tolerance: float | None, guard: bool
) -> tuple[MetricResult, MetricPath | None]:
    if isinstance(built, str):
        text = _tolerance_text(name, tolerance, math.nan) if tolerance is not None else None
        return MetricResult(
            name,
            what,
            Estimate.empty("skipped"),
            math.nan,
            higher,
            tolerance,
            "skipped",
            built,
            text,
        ), None
    m, _ts = built
    effect, crossed = effect_at(m), crossed_at(m)
    p = float(m.path.p_value[-1]) if m.path.p_value.size else 1.0
    status: str
    reason: str | None = None
    if guard:
        status, reason = guardrail_status(name, effect, m.tolerance, higher, crossed)
    else:
        status = _score_status(effect, crossed, higher)
    tol = m.tolerance if guard else None
    text = _tolerance_text(name, tolerance, m.tolerance) if tolerance is not None else None
    return MetricResult(
        name, m.what, effect, p, higher, tol, status, None, text, reason, crossed
    ), m


def _score_status(effect: Estimate, crossed: tuple[float, float] | None, higher: bool) -> str:
    """A score's standing: ``better`` / ``worse`` for sure, ``open``, or ``moved`` (empty
    sequence; ``worse`` when it still shows the candidate worse at some look)."""
    if crossed is not None:
        return "worse" if (crossed[1] < 0 if higher else crossed[0] > 0) else "moved"
    gain_low, gain_high = (effect.low, effect.high) if higher else (-effect.high, -effect.low)
    return "better" if gain_low > 0 else "worse" if gain_high < 0 else "open"


def _path(built: Built) -> tuple[dict[str, Any], ...]:
    if isinstance(built, str):
        return ()
    m, ts = built
    size = m.path.estimate.shape[-1]
    picks = sorted(
        {round(i * (size - 1) / (_PATH_POINTS - 1)) for i in range(_PATH_POINTS)}
        if size > _PATH_POINTS
        else range(size)
    )
    out = []
    for i in picks:
        e = effect_at(m, i + 1)
        out.append(
            {
                "n": e.n,
                "ts": ts[i].isoformat() if i < len(ts) else None,
                "estimate": _clean(e.value),
                "low": _clean(e.low),
                "high": _clean(e.high),
            }
        )
    return tuple(out)


def analyze_ab(store: Store, cfg: ABConfig, scoring: Sequence[ScoringReport] = ()) -> ABResult:
    """The decision from what is logged and stored now (nothing is scored here)."""
    mode, exchanges, counts = _window(store, cfg)
    st = Settings(mode, cfg.alpha / 2, cfg.min_n, cfg.max_n or cfg.n_target)
    prices: dict[str, tuple[float, float]] = {
        role: (p.input, p.output) for role, p in cfg.prices.items()
    }
    refusals = _scores(store, REFUSAL, exchanges)
    tolerances = DEFAULT_TOLERANCES | cfg.tolerances
    ready = {
        g: prepare_guardrail(g, exchanges, refusals, prices, tolerances[g], st) for g in GUARDRAILS
    }
    k = max(1, sum(not isinstance(r, str) for r in ready.values()))  # the guardrails in use
    st_g = Settings(mode, cfg.alpha / (2 * k), cfg.min_n, st.n_target, st.blocks)
    built = {
        g: build_guardrail(g, exchanges, refusals, prices, tolerances[g], st_g, prepared=ready[g])
        for g in GUARDRAILS
    }
    rails = [_result(g, b, g, False, tolerances[g], True) for g, b in built.items()]
    keys = (
        list(cfg.keys)
        if cfg.keys is not None
        else [parse_scorer(s, judge_model=cfg.judge_model).key for s in cfg.scorers]
    )
    scored = [
        (key, build_score_metric(key, exchanges, _scores(store, key, exchanges), st))
        for key in keys
    ]
    results = [_result(key, b, key, True, None, False) for key, b in scored]
    primary, primary_path = results[0] if results else (None, None)
    decision = decide_at(
        primary_path,
        [m for _, m in rails if m is not None],
        min_improvement=cfg.min_improvement,
        max_n=cfg.max_n,
    )
    if (
        decision.action == "roll_back"
        and primary is not None
        and primary_path is not None
        and not any(r.startswith("primary:") for r in decision.reasons)
    ):
        decision = Decision(
            "roll_back",
            (
                f"primary: {primary.effect.format()} (not decisive: a guardrail failed)",
                *decision.reasons,
            ),
        )
    if primary_path is None:
        head = (
            f"primary: {primary.skipped}"
            if primary is not None
            else (
                "primary: no quality scorer given (--scorer, --judge-model): nothing can be "
                "promoted; guardrails only"
            )
        )
        rest = decision.reasons if decision.action == "roll_back" else decision.reasons[1:]
        decision = Decision(decision.action, (head, *rest))
    return ABResult(
        decision,
        mode,
        cfg.alpha,
        primary,
        tuple(r for r, _ in rails),
        tuple(r for r, _ in results[1:]),
        counts,
        exchanges[0].ts,
        exchanges[-1].ts,
        cfg.since,
        cfg.until,
        _path(scored[0][1]) if scored else (),
        tuple(scoring),
    )


async def run_ab(store: Store, cfg: ABConfig, *, progress: Progress | None = None) -> ABResult:
    """Score what is missing (refusal patterns on every answer; the ``scorers`` on the
    ``sample``), store it, then :func:`analyze_ab`."""
    reports: list[ScoringReport] = []
    if cfg.score:
        _mode, exchanges, _counts = _window(store, cfg)
        parsed = [parse_scorer(s, judge_model=cfg.judge_model) for s in cfg.scorers]
        refusal = parse_scorer(REFUSAL)
        reports += await score_exchanges(
            store, exchanges, [refusal], concurrency=cfg.concurrency, progress=progress
        )
        chosen = sample_exchanges(exchanges, cfg.sample, cfg.seed)
        others = [p for p in parsed if p.key != REFUSAL]
        reports += await score_exchanges(
            store,
            chosen,
            others,
            concurrency=cfg.concurrency,
            retry_failed=cfg.retry_failed,
            progress=progress,
        )
    return analyze_ab(store, cfg, reports)

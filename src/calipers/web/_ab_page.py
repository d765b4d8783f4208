"""The A/B page (``/ab``, ``/api/ab``): ``calipers ab`` on what is logged and stored, read only.

A page load scores nothing: it runs :func:`calipers.monitor.analyze_ab`, which reads the
traffic and the online scores already stored (refusal flags and judge grades are written by
``calipers ab``, which is where scoring is paid for). Query parameters follow the CLI's
options: ``since``, ``until``, ``mode``, ``scorer`` (stored keys; the first is the primary
metric), ``alpha``, ``min-improvement``, ``max-n``, ``price``, ``guardrail``. Without
``scorer`` the primary metric is the one quality score stored for the window, if there is
exactly one (the page says which it took).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from calipers._util.clock import utc_now
from calipers.errors import ConfigError, DataError
from calipers.monitor import ABConfig, ABResult, MetricResult, analyze_ab, arm_prices, parse_when
from calipers.reports import diff_axis
from calipers.store import Store
from calipers.types import Estimate
from calipers.web._charts import Rule, Series, TimePoint, time_series_svg
from calipers.web._params import command, given, iso, many, number, text, with_param
from calipers.web._sections import SectionPage

__all__ = ["ab_page"]

REFUSAL, FEEDBACK = "refusal", "feedback"
LABELS = {"promote": "promote", "keep_watching": "keep watching", "roll_back": "roll back"}
FAILING = frozenset({"failing", "worse"})
"""Statuses of a metric that count against the candidate (a guardrail beyond its tolerance, a
score shown worse): shown in red."""


@dataclass
class ABQuery:
    """The page's parameters as typed (for the form) and their meaning."""

    since: str = ""
    until: str = ""
    mode: str = ""
    alpha: str = ""
    min_improvement: str = ""
    max_n: str = ""
    scorers: list[str] = field(default_factory=list)
    scorer_given: bool = False
    prices: list[str] = field(default_factory=list)
    guardrails: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, params: Mapping[str, str]) -> ABQuery:
        return cls(
            since=text(params, "since") or "",
            until=text(params, "until") or "",
            mode=text(params, "mode") or "",
            alpha=text(params, "alpha") or "",
            min_improvement=text(params, "min-improvement") or "",
            max_n=text(params, "max-n") or "",
            scorers=many(params, "scorer"),
            scorer_given=given(params, "scorer"),
            prices=many(params, "price"),
            guardrails=many(params, "guardrail"),
        )


def _primary(q: ABQuery, stored: Counter[str]) -> tuple[tuple[str, ...], str | None]:
    """The scorer keys to analyse (first = primary) and, when chosen here, why."""
    if q.scorer_given:
        return tuple(q.scorers), None
    quality = sorted(k for k in stored if k not in (REFUSAL, FEEDBACK))
    if len(quality) == 1:
        return (quality[0],), (
            f"Primary metric: {quality[0]}, the only quality score stored "
            "for this window (choose another with scorer=)."
        )
    if not quality and FEEDBACK in stored:
        return (FEEDBACK,), (
            "Primary metric: user feedback, the only score stored for this window besides refusals."
        )
    if quality:
        return (), (
            f"Several quality scores are stored ({', '.join(quality)}): choose the "
            "primary metric with scorer=."
        )
    return (), None


def _tolerances(values: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for v in values:
        name, _, tol = v.partition("=")
        try:
            out[name.strip()] = float(tol)
        except ValueError:
            raise ConfigError(
                f"Bad guardrail={v!r}.",
                hint="Write NAME=TOLERANCE, e.g. guardrail=error_rate=0.02.",
            ) from None
    return out


def _config(
    store: Store, q: ABQuery, params: Mapping[str, str], now: datetime
) -> tuple[ABConfig, Counter[str], str | None]:
    since = parse_when(q.since, now) if q.since else None
    until = parse_when(q.until, now) if q.until else None
    if q.mode not in ("", "shadow", "canary"):
        raise ConfigError(f"Bad mode={q.mode!r}.", hint="Use mode=shadow or mode=canary.")
    stored = Counter(r.scorer for r in store.get_online_scores(since=since, until=until))
    scorers, note = _primary(q, stored)
    fields: dict[str, Any] = {
        "mode": q.mode or None,
        "since": since,
        "until": until,
        "keys": scorers,
        "score": False,
        "prices": arm_prices(q.prices),
        "tolerances": _tolerances(q.guardrails),
    }
    numbers = {
        "alpha": number(params, "alpha", float, low=0, high=1, open_low=True, open_high=True),
        "min_improvement": number(params, "min-improvement", float, low=0),
        "max_n": number(params, "max-n", int, low=1),
    }
    try:
        cfg = ABConfig(**fields, **{k: v for k, v in numbers.items() if v is not None})
    except ValueError as e:  # pydantic's ValidationError
        raise ConfigError(f"Bad A/B parameter: {e}") from None
    return cfg, stored, note


# -- the view -----------------------------------------------------------------------------------


def _row(role: str, r: MetricResult) -> dict[str, Any]:
    return {
        "role": role,
        "name": r.name + (" (uncalibrated)" if r.uncalibrated else ""),
        "what": r.what,
        "n": r.effect.n,
        "effect": r.effect_text(),
        "p": "" if r.skipped else f"{r.p_value:.3g}",
        "confidence": r.effect.confidence,
        "tolerance": r.tolerance_text or "",
        "status": r.status,
        "skipped": r.skipped,
        "failing": r.status in FAILING,
    }


def _path_chart(result: ABResult, min_improvement: float, min_n: int) -> tuple[Any, str]:
    """The primary effect's path with its confidence sequence, or (no observation yet, or
    no finite interval yet) ``None`` and a sentence saying why there is no chart."""
    if result.primary is None or result.primary.skipped:
        return None, ""
    if not result.path:
        return None, ("No chart yet: no request has a score of the primary metric on both arms.")

    def f(x: Any) -> float:
        return math.nan if x is None else float(x)

    conf = result.primary.effect.confidence
    points = [
        TimePoint(
            p["n"],
            Estimate(
                f(p["estimate"]),
                f(p["low"]),
                f(p["high"]),
                int(p["n"]),
                "msprt-normal-mixture",
                conf,
            ),
        )
        for p in result.path
    ]
    n = points[-1].est.n
    if not any(math.isfinite(p.est.low) and math.isfinite(p.est.high) for p in points):
        return None, (
            f"No chart yet: the confidence sequence is unbounded until the test's "
            f"burn-in of {min_n:,} observations, and there are {n:,}. An estimate "
            "without its interval would look like an answer; it is not one."
        )
    rules = [Rule(0.0, "no difference")]
    if min_improvement > 0:
        rules.append(Rule(min_improvement, f"needed to promote: +{min_improvement:g}"))
    axis = diff_axis(
        [p.est for p in points]
        + [Estimate(min_improvement, min_improvement, min_improvement, 1, "rule")],
        points=False,
    )
    return time_series_svg(
        [Series(f"{result.primary.name}: candidate − baseline", points)],
        title=f"{result.primary.name}: estimate and {100 * conf:.4g}% confidence sequence "
        "by number of observations",
        y_axis=axis,
        rules=rules,
        x_label="observations, in arrival order",
    ), ""


def _commands(cfg: ABConfig, store: Store) -> dict[str, str]:
    """The CLI commands behind the page: ``same`` analyses exactly what the page shows
    (stored scores only); ``score`` pays for the missing scores (a judge model is needed)."""
    base = ["calipers", "--store", store.url, "ab"]
    base += ["--since", iso(cfg.since)] if cfg.since else []
    base += ["--until", iso(cfg.until)] if cfg.until else []
    base += ["--mode", cfg.mode] if cfg.mode else []
    opts: list[str] = []
    for arm, p in cfg.prices.items():
        opts += ["--price", f"{arm}={p.input:g}/{p.output:g}"]
    for name, tol in cfg.tolerances.items():
        opts += ["--guardrail", f"{name}={tol:g}"]
    opts += ["--alpha", f"{cfg.alpha:g}"] if cfg.alpha != 0.05 else []
    opts += ["--min-improvement", f"{cfg.min_improvement:g}"] if cfg.min_improvement else []
    opts += ["--max-n", str(cfg.max_n)] if cfg.max_n else []

    def scorers(keys: Sequence[str], judge: bool) -> list[str]:
        return [a for k in keys for a in ("--scorer", k)] + (
            ["--judge-model", "SPEC"]
            if judge and any(k.startswith("llm_judge") for k in keys)
            else []
        )

    keys = cfg.keys or ()
    return {
        "same": command([*base, "--no-score", *scorers(keys, False), *opts]),
        "score": command([*base, *scorers(keys or ("llm_judge:helpfulness",), True), *opts]),
    }


def ab_page(store: Store, params: Mapping[str, str]) -> SectionPage:
    """The A/B status page and its JSON (``ABResult.to_dict()``)."""
    q = ABQuery.read(params)
    context: dict[str, Any] = {
        "q": q,
        "labels": LABELS,
        "chosen": q.scorers[0] if q.scorers else "",
    }
    try:
        cfg, stored, note = _config(store, q, params, utc_now())
        result = analyze_ab(store, cfg)
    except (ConfigError, DataError) as e:
        mixed = "not mixed" in e.message  # the window holds shadow and canary traffic
        context.update(
            problem=e,
            result=None,
            mode_links={m: with_param("/ab", params, "mode", m) for m in ("shadow", "canary")}
            if mixed
            else {},
        )
        api = {"error": e.message, "hint": e.hint}
        if isinstance(e, DataError):
            return SectionPage("ab.html.j2", context, api, 200, 404)
        return SectionPage("ab.html.j2", context, api, 400)
    rows = [_row("primary", result.primary)] if result.primary else []
    chart, chart_note = _path_chart(result, cfg.min_improvement, cfg.min_n)
    context.update(
        problem=None,
        result=result,
        note=note,
        stored=sorted(stored.items()),
        chosen=cfg.keys[0] if cfg.keys else "",  # the form keeps an automatic pick
        primary=rows[0] if rows else None,
        guardrails=[_row("guardrail", g) for g in result.guardrails],
        secondary=[_row("secondary", s) for s in result.secondary],
        chart=chart,
        chart_note=chart_note,
        min_n=cfg.min_n,
        commands=_commands(cfg, store),
        refusals_stored=stored.get(REFUSAL, 0),
    )
    return SectionPage("ab.html.j2", context, result.to_dict())

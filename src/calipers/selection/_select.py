"""``calipers select``: hard constraints, measured capability, cost and latency, the Pareto
front, and a recommendation that says how sure it is.

Every check is three-valued: ``pass``, ``fail`` or ``unknown`` (a measurement is missing or
its interval straddles the threshold). A model is recommended only among those that pass
every hard constraint; "unknown" is never counted as a pass, and a missing price or latency
is shown as missing, never as zero.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from calipers.analysis import StoredRun, compare, find_reusable, load_runs, run_factors
from calipers.cards import CardCatalog, CatalogEntry
from calipers.errors import ConfigError
from calipers.models import ModelOptions
from calipers.runner import RunConfig, arun, make_plan
from calipers.selection._spec import Candidate, Selection, openness_rank
from calipers.store import Store
from calipers.types import Estimate

__all__ = ["Check", "ModelResult", "SelectionResult", "select"]

Status = Literal["pass", "fail", "unknown"]


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Check(_Out):
    name: str
    status: Status
    detail: str


class ModelResult(_Out):
    label: str
    card: str | None
    spec: str | None
    run_id: str | None
    licence: str | None
    openness: str | None
    mof: str | None
    checks: list[Check]
    scores: dict[str, dict[str, Any]]  # task -> Estimate.to_dict()
    weighted: dict[str, Any] | None  # weighted score, Estimate.to_dict()
    cost_per_1000_usd: dict[str, Any] | None
    latency_p95_s: dict[str, Any] | None
    eligible: bool  # every hard constraint passes
    pareto: bool = False

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status != "pass"]


class SelectionResult(_Out):
    name: str
    tasks: dict[str, float]
    models: list[ModelResult]
    comparisons: list[dict[str, Any]]  # weighted paired difference of each model vs the best
    recommendation: str
    confidence: str


def _card(catalog: CardCatalog, c: Candidate) -> CatalogEntry | None:
    if c.card is not None:
        return catalog.get(c.card)  # unknown names raise with "did you mean"
    try:
        return catalog.get(c.spec or "")
    except ConfigError:
        return None


def _card_checks(sel: Selection, entry: CatalogEntry | None) -> list[Check]:
    req, checks = sel.require, []
    card = entry.card if entry else None
    if req.openness is not None:
        if entry is None:
            checks.append(
                Check(
                    name="openness", status="unknown", detail="no model card: openness not assessed"
                )
            )
        else:
            got = entry.openness.openness_class
            ok = openness_rank(got) >= openness_rank(req.openness)
            checks.append(
                Check(
                    name="openness",
                    status="pass" if ok else "fail",
                    detail=f"{got} (needs {req.openness} or more open)",
                )
            )
    if req.licences is not None:
        lic = card.licence if card else None
        if lic is None:
            checks.append(Check(name="licence", status="unknown", detail="licence not stated"))
        else:
            ok = lic in req.licences
            why = "allowed" if ok else "not in " + ", ".join(req.licences)
            checks.append(
                Check(name="licence", status="pass" if ok else "fail", detail=f"{lic} ({why})")
            )
    return checks


def _threshold(
    name: str, est: Estimate | None, limit: float, *, at_least: bool, unit: str, k: float = 1.0
) -> Check:
    """pass / fail / unknown for a measurement against a threshold, from its interval."""
    if est is None or est.is_empty:
        return Check(name=name, status="unknown", detail="missing: not measured")
    text = f"{est.value * k:.3g}{unit} [{est.low * k:.3g}, {est.high * k:.3g}]"
    goal = f"{'>=' if at_least else '<='} {limit * k:.3g}{unit}"
    if (est.low >= limit) if at_least else (est.high <= limit):
        return Check(name=name, status="pass", detail=f"{text}, {goal}")
    if (est.high < limit) if at_least else (est.low > limit):
        return Check(name=name, status="fail", detail=f"{text}, needs {goal}")
    return Check(
        name=name,
        status="unknown",
        detail=f"{text}: the interval straddles {goal}; more items would tell",
    )


def _score(run: StoredRun, task: str) -> Estimate | None:
    ts = run.record.task_summary(task)
    return ts.metrics[ts.primary] if ts and ts.primary else None


def _weighted(scores: dict[str, Estimate | None], weights: dict[str, float]) -> Estimate | None:
    """Weighted mean of the task scores; tasks independent, each standard error read from its
    interval (normal approximation)."""
    ests: dict[str, Estimate] = {}
    for t in weights:
        e = scores.get(t)
        if e is None or e.is_empty:
            return None
        ests[t] = e
    total = sum(weights.values())
    z = float(sps.norm.ppf(0.975))
    value = sum(w * ests[t].value for t, w in weights.items()) / total
    se = math.sqrt(
        sum((w / total * (ests[t].high - ests[t].low) / (2 * z)) ** 2 for t, w in weights.items())
    )
    n = min(e.n for e in ests.values())
    return Estimate(value, value - z * se, value + z * se, n, "weighted-normal", 0.95)


def _config(sel: Selection, c: Candidate, spec: str) -> RunConfig:
    opts = ModelOptions(base_url=c.base_url) if c.base_url else ModelOptions()
    return RunConfig(
        model=spec,
        tasks=tuple(sel.all_tasks),
        limit=sel.run.limit,
        seed=sel.run.seed,
        data_dir=sel.run.data_dir,
        chat_template=sel.run.chat_template,
        model_options=opts,
    )


def _reuse_or_run(store: Store, config: RunConfig, log: Callable[[str], None]) -> StoredRun:
    """The newest finished run of this model measured exactly as ``config`` would, else a new
    run."""
    found = find_reusable(store, make_plan(config), same_tasks=True)
    if found is not None:
        log(f"reusing run {found.record.id} for {config.model}")
        return found
    log(f"running {config.model} on {', '.join(config.tasks)}")
    result = asyncio.run(arun(config, store))
    return load_runs(store, [result.run_id])[0]


def _measure(
    sel: Selection,
    c: Candidate,
    entry: CatalogEntry | None,
    store: Store,
    log: Callable[[str], None],
) -> tuple[ModelResult, StoredRun | None]:
    card = entry.card if entry else None
    spec = c.spec or (card.spec if card else None)
    label = card.name if card else (spec or "?")
    checks = _card_checks(sel, entry)
    base = dict(
        label=label,
        card=card.name if card else None,
        spec=spec,
        licence=card.licence if card else None,
        openness=entry.openness.openness_class if entry else None,
        mof=entry.mof.label if entry else None,
    )
    if any(ch.status == "fail" for ch in checks) or spec is None:
        if spec is None:
            checks.append(
                Check(
                    name="run",
                    status="unknown",
                    detail="the card gives no calipers spec: cannot be run",
                )
            )
        return ModelResult(
            **base,
            run_id=None,
            checks=checks,
            scores={},
            weighted=None,
            cost_per_1000_usd=None,
            latency_p95_s=None,
            eligible=False,
        ), None
    run = _reuse_or_run(store, _config(sel, c, spec), log)
    scores = {t: _score(run, t) for t in sel.all_tasks}
    for task, minimum in sel.require.capability.items():
        checks.append(
            _threshold(
                f"capability {task}", scores.get(task), minimum, at_least=True, unit=" pts", k=100.0
            )
        )
    f = run_factors(run, card=card, hardware_cost_per_hour=sel.run.hardware_cost_per_hour)
    if sel.limits.cost_per_1000_usd is not None:
        checks.append(
            _threshold(
                "cost per 1,000 items",
                f.cost_per_1000_usd,
                sel.limits.cost_per_1000_usd,
                at_least=False,
                unit=" USD",
            )
        )
    if sel.limits.latency_p95_s is not None:
        checks.append(
            _threshold(
                "latency p95", f.latency_p95_s, sel.limits.latency_p95_s, at_least=False, unit=" s"
            )
        )
    weighted = _weighted(scores, sel.tasks)
    return ModelResult(
        **base,
        run_id=run.record.id,
        checks=checks,
        scores={t: e.to_dict() for t, e in scores.items() if e is not None},
        weighted=weighted.to_dict() if weighted else None,
        cost_per_1000_usd=_finite(f.cost_per_1000_usd),
        latency_p95_s=_finite(f.latency_p95_s),
        eligible=all(ch.status == "pass" for ch in checks),
    ), run


def _finite(e: Estimate | None) -> dict[str, Any] | None:
    if e is None:
        return None
    return {
        k: None if isinstance(v, float) and math.isinf(v) else v for k, v in e.to_dict().items()
    }


def _bounds(e: dict[str, Any] | None) -> tuple[float, float] | None:
    if not e:
        return None
    low, high = e.get("low"), e.get("high")
    return (-math.inf if low is None else low, math.inf if high is None else high)


def _pareto(models: list[ModelResult]) -> list[ModelResult]:
    """Non-dominated among the measured models: higher weighted score, lower cost, lower
    latency p95. One model dominates another when it is not worse on any axis both have and
    better on at least one *beyond noise* (the two intervals do not overlap); overlapping
    intervals count as equal, and a missing cost or latency is not compared on that axis."""

    def axes(m: ModelResult) -> list[tuple[tuple[float, float] | None, bool]]:
        return [
            (_bounds(m.weighted), True),
            (_bounds(m.cost_per_1000_usd), False),
            (_bounds(m.latency_p95_s), False),
        ]

    def dominates(a: ModelResult, b: ModelResult) -> bool:
        better = False
        for (ia, higher), (ib, _h) in zip(axes(a), axes(b), strict=True):
            if ia is None or ib is None:
                continue
            a_better = ia[0] > ib[1] if higher else ia[1] < ib[0]
            b_better = ib[0] > ia[1] if higher else ib[1] < ia[0]
            if b_better:
                return False
            better = better or a_better
        return better

    measured = [m for m in models if m.weighted is not None]
    front = {m.label for m in measured if not any(dominates(o, m) for o in measured)}
    return [m.model_copy(update={"pareto": m.label in front}) for m in models]


def _weighted_diffs(
    sel: Selection, best: tuple[ModelResult, StoredRun], others: list[tuple[ModelResult, StoredRun]]
) -> list[dict[str, Any]]:
    """Each other eligible model against the best, per task paired, then weighted."""
    out = []
    for m, run in others:
        cs = compare([best[1], run], tasks=list(sel.tasks))
        per_task = {r.task: r.diff for r in cs.rows if r.task in sel.tasks}
        w = _weighted(dict(per_task), sel.tasks)
        out.append(
            {
                "model": m.label,
                "versus": best[0].label,
                "per_task": {t: e.to_dict() for t, e in per_task.items()},
                "weighted_diff": w.to_dict() if w else None,
            }
        )
    return out


def _rank(m: ModelResult) -> tuple[float, float]:
    """Best first: the higher weighted score, then (on a tie) the lower cost."""
    cost = m.cost_per_1000_usd["value"] if m.cost_per_1000_usd else math.inf
    return (-(m.weighted or {}).get("value", -math.inf), cost)


def _recommend(models: list[ModelResult], diffs: list[dict[str, Any]]) -> tuple[str, str]:
    eligible = sorted((m for m in models if m.eligible and m.weighted), key=_rank)
    if not eligible:
        reasons = "; ".join(
            f"{m.label}: " + ", ".join(f"{c.name} {c.status} ({c.detail})" for c in m.failed[:2])
            for m in models
        )
        return f"No model passes every hard constraint. {reasons}", "none"
    best = eligible[0]
    tied = [
        d["model"]
        for d in diffs
        if d["weighted_diff"] and d["weighted_diff"]["low"] <= 0 <= d["weighted_diff"]["high"]
    ]
    if not tied:
        return (
            f"{best.label} scores highest on your weighted tasks "
            f"({_pct(best.weighted)}) and the others are below it beyond their intervals.",
            "high",
        )
    rest = []
    for name in tied:
        m = next(x for x in eligible if x.label == name)
        rest.append(f"{name}{_contrast(best, m)}")
    lead = (
        f"{best.label} scores highest ({_pct(best.weighted)}), but"
        if all(
            (next(x for x in eligible if x.label == n).weighted or {}).get("value")
            != (best.weighted or {}).get("value")
            for n in tied
        )
        else f"{best.label} ({_pct(best.weighted)}, the cheapest of the best)"
    )
    return (
        f"{lead} cannot be separated from {', '.join(rest)} on your tasks: choose among "
        "them on cost, latency and openness, or measure more items.",
        "low",
    )


def _contrast(best: ModelResult, other: ModelResult) -> str:
    notes = []
    cb, co = best.cost_per_1000_usd, other.cost_per_1000_usd
    if cb and co and co["value"] > 0 and cb["value"] > 0:
        ratio = cb["value"] / co["value"]
        if ratio >= 1.5:
            notes.append(f"{ratio:.1f}x cheaper")
    if (
        other.openness
        and best.openness
        and openness_rank(other.openness) > openness_rank(best.openness)
    ):
        notes.append(other.openness)
    return f" ({', '.join(notes)})" if notes else ""


def _pct(e: dict[str, Any] | None) -> str:
    if not e:
        return "n/a"
    return f"{100 * e['value']:.1f} [{100 * e['low']:.1f}, {100 * e['high']:.1f}]"


def select(
    sel: Selection,
    store: Store,
    *,
    catalog: CardCatalog | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> SelectionResult:
    """Check every candidate, run or reuse the runs needed, and decide."""
    catalog = catalog or CardCatalog.load()
    measured = [_measure(sel, c, _card(catalog, c), store, log) for c in sel.candidates]
    models = _pareto([m for m, _r in measured])
    runs = {m.label: r for m, r in measured if r is not None}
    eligible = sorted(
        (m for m in models if m.eligible and m.weighted and m.label in runs), key=_rank
    )
    diffs = (
        _weighted_diffs(
            sel, (eligible[0], runs[eligible[0].label]), [(m, runs[m.label]) for m in eligible[1:]]
        )
        if eligible
        else []
    )
    text, conf = _recommend(models, diffs)
    return SelectionResult(
        name=sel.name,
        tasks=dict(sel.tasks),
        models=models,
        comparisons=diffs,
        recommendation=text,
        confidence=conf,
    )

"""``calipers gate``: is the candidate worse than the baseline by more than an allowed drop?

A non-inferiority test per task and metric, on the items both runs scored. With ``d`` the
paired difference (candidate − baseline), ``m`` the allowed drop (``max_drop``, in score
units) and the two-sided interval of ``d`` at ``1 − alpha/k`` (Bonferroni over the ``k``
task/metric comparisons; Newcombe's paired interval for 0/1 scores, paired bootstrap else):

* **pass**: the interval's low end is above ``−m``: shown not worse than the allowed drop;
* **fail**: the interval's high end is below ``−m``: shown worse by more than the allowed drop;
* **inconclusive**: the interval contains ``−m``: not enough items to tell either way.

Each claim is a one-sided test at ``alpha / (2k)``, and the ``k`` intervals hold together
with probability at least ``1 − alpha``, so every pass and fail in one gate is jointly
defensible. The gate fails if any comparison fails, passes only if all pass, and is
inconclusive otherwise. See ``docs/gate.md``.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from scipy import stats

from calipers._util.seeding import derived_rng
from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
from calipers.analysis._error_compare import error_gate_row, error_pair, gate_error_rules
from calipers.analysis._reuse import find_reusable
from calipers.errors import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, ConfigError
from calipers.models import ModelProvider
from calipers.runner import (
    Plan,
    Progress,
    RunConfig,
    arun,
    make_plan,
)
from calipers.stats import paired_compare, sample_size_paired
from calipers.store import Store
from calipers.tasks import resolve_task
from calipers.types import Estimate

__all__ = [
    "EXIT_CODES",
    "GateConfig",
    "GatePlan",
    "GateResult",
    "GateRow",
    "RunUsed",
    "SizeCheck",
    "gate",
    "judge",
    "prepare_gate",
    "run_gate",
]

Verdict = Literal["pass", "fail", "inconclusive"]
EXIT_CODES: dict[str, int] = {
    "pass": EXIT_PASS,
    "fail": EXIT_FAIL,
    "inconclusive": EXIT_INCONCLUSIVE,
}
_RUN_REF = re.compile(r"\d{8}[-\w]*")  # run ids are YYYYMMDD-HHMMSS-xxxxxx


class GateConfig(BaseModel):
    """What to gate. ``baseline``/``candidate``: a stored run (id, unique prefix or
    ``latest``) or a model spec. ``run_options``: RunConfig fields (limit, seed, ...) for the
    runs to make; unset ones come from a stored baseline run, else RunConfig's defaults."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    baseline: str
    candidate: str
    suite: tuple[str, ...] = ()
    max_drop: float = Field(0.02, gt=0)
    metrics: tuple[str, ...] = ("primary",)
    alpha: float = Field(0.05, gt=0, lt=1)
    power: float = Field(0.8, gt=0, lt=1)
    assumed_discordance: float = Field(0.25, gt=0, le=1)
    strict_size: bool = False
    run_options: dict[str, Any] = Field(default_factory=dict)
    baseline_base_url: str | None = None
    max_error_growth: dict[str, float] = Field(default_factory=dict)  # error type -> points


class SizeCheck(BaseModel):
    """The suite's size against ``max_drop``, before any model is called."""

    model_config = ConfigDict(frozen=True)

    items_needed: int
    assumed_discordance: float
    comparisons: int
    items: dict[str, int]
    too_small: list[str]
    message: str | None


class GateRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    n: int
    baseline: Estimate
    candidate: Estimate
    diff: Estimate
    max_drop: float
    verdict: Verdict
    items_needed: int | None
    discordance: float | None  # share of items scored differently (for --assumed-discordance)
    test: str
    p_value: float | None  # two-sided test of no difference, for information
    excluded: dict[str, int]
    points: bool  # scores in [0, 1]: shown in percentage points
    explanation: str


class RunUsed(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    model: str
    source: Literal["given", "reused", "ran"]


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    exit_code: int
    summary: str
    baseline: RunUsed | None
    candidate: RunUsed | None
    max_drop: float
    alpha: float
    power: float
    correction: str = "bonferroni"
    comparisons: int
    confidence: float
    size: SizeCheck | None
    refused: bool = False  # strict size check: nothing was run
    rows: list[GateRow]


@dataclass(frozen=True)
class Side:
    """One side of the gate: a stored run (given or reused), or a plan still to run."""

    spec: str
    run: StoredRun | None
    plan: Plan | None
    source: Literal["given", "reused", "ran"]


@dataclass(frozen=True)
class GatePlan:
    config: GateConfig
    baseline: Side
    candidate: Side
    tasks: tuple[str, ...]
    size: SizeCheck

    @property
    def refused(self) -> bool:
        return self.config.strict_size and bool(self.size.too_small)


# -- size ---------------------------------------------------------------------------


def size_check(
    items: Mapping[str, int],
    comparisons: int,
    max_drop: float,
    alpha: float,
    power: float,
    assumed_discordance: float,
) -> SizeCheck:
    """Items a paired non-inferiority test needs to show a margin of ``max_drop`` with
    ``power`` if the two models are truly equal and disagree on ``assumed_discordance`` of
    the items (the variance of a 0/1 difference then), at ``alpha / comparisons``."""
    k = max(1, comparisons)
    need = sample_size_paired(max_drop, var_diff=assumed_discordance, alpha=alpha / k, power=power)
    small = [t for t, n in items.items() if n < need]
    message = None
    if small:
        have = "; ".join(f"{t} has {items[t]:,}" for t in small)
        message = (
            f"suite too small for --max-drop {max_drop:g}: needs about {need:,} items per task "
            f"(if the models disagree on {assumed_discordance:.0%} of items; {power:.0%} "
            f"power, alpha {alpha:g}{f' over {k} comparisons' if k > 1 else ''}); {have}"
        )
    return SizeCheck(
        items_needed=need,
        assumed_discordance=assumed_discordance,
        comparisons=k,
        items=dict(items),
        too_small=small,
        message=message,
    )


def _needed(
    p: Paired, diff: Estimate, max_drop: float, alpha: float, power: float, binary: bool
) -> int | None:
    """Items to decide, if the observed difference were the truth (an observed gain is not
    counted on: 0 instead) with the observed variance of the per-item differences; for 0/1
    scores at least ``m(1 − m)`` (a drop of ``m`` means disagreeing on ``m`` of the items)."""
    delta = abs(max_drop + min(diff.value, 0.0))
    if diff.is_empty or delta == 0.0:
        return None
    d = p.b - p.a
    var = float(np.var(d, ddof=1)) if d.size > 1 else math.nan
    if p.clusters is not None and math.isfinite(diff.half_width):  # design effect included
        var = d.size * (diff.half_width / float(stats.norm.ppf(0.5 + diff.confidence / 2))) ** 2
    if binary and max_drop < 1:
        var = max(var if math.isfinite(var) else 0.0, max_drop * (1 - max_drop))
    if not (math.isfinite(var) and var > 0):
        return None
    return sample_size_paired(delta, var_diff=var, alpha=alpha, power=power)


# -- one comparison -----------------------------------------------------------------


def _fmt(x: float, points: bool) -> str:
    return f"{100 * x:+.1f}" if points else f"{x:+.4g}"


def _explain(v: Verdict, d: Estimate, m: float, points: bool, n: int, needed: int | None) -> str:
    if n == 0:
        return "inconclusive: no item was scored by both runs"
    unit = " points" if points else ""
    shown = (
        f"candidate − baseline = {_fmt(d.value, points)}{unit} [{_fmt(d.low, points)}, "
        f"{_fmt(d.high, points)}] ({100 * d.confidence:.4g}% interval, n={n:,})"
    )
    bound = f"{_fmt(-m, points)}{unit}"
    if v == "pass":
        worse = "; worse than the baseline, but by less than the allowed drop" if d.high < 0 else ""
        return f"not worse: {shown}; its low end is above the allowed drop of {bound}{worse}"
    if v == "fail":
        return f"regression: {shown}; the whole interval is below the allowed drop of {bound}"
    need = (
        f"needs about {needed:,} items"
        if needed is not None
        else "no number of items can be promised (the difference sits on the margin)"
    )
    return (
        f"inconclusive: {shown} contains the allowed drop of {bound}; {need}; the suite has {n:,}"
    )


def gate_row(p: Paired, *, max_drop: float, alpha: float, power: float, seed: int) -> GateRow:
    """Judge one task/metric at ``alpha`` (already divided by the number of comparisons)."""
    rng = derived_rng(seed, p.task, p.metric)
    res = paired_compare(
        p.a,
        p.b,
        rng=rng,
        confidence=1 - alpha,
        alpha=alpha,
        power=power,
        clusters=list(p.clusters) if p.clusters else None,
    )
    d = res.diff
    verdict: Verdict = "inconclusive"
    if res.n > 0 and d.low > -max_drop:
        verdict = "pass"
    elif res.n > 0 and d.high < -max_drop:
        verdict = "fail"
    binary = res.n_discordant is not None
    needed = _needed(p, d, max_drop, alpha, power, binary) if verdict == "inconclusive" else None
    both = np.concatenate([p.a, p.b])
    points = bool(both.size) and bool(((both >= 0) & (both <= 1)).all())
    return GateRow(
        task=p.task,
        metric=p.metric,
        n=res.n,
        baseline=res.mean_a,
        candidate=res.mean_b,
        diff=d,
        max_drop=max_drop,
        verdict=verdict,
        items_needed=needed,
        test=res.test,
        discordance=float(np.mean(p.a != p.b)) if res.n else None,
        p_value=None if math.isnan(res.p_value) else float(res.p_value),
        excluded={
            "only_baseline": p.only_a,
            "only_candidate": p.only_b,
            "errors_baseline": p.errors_a,
            "errors_candidate": p.errors_b,
        },
        points=points,
        explanation=_explain(verdict, d, max_drop, points, res.n, needed),
    )


# -- several comparisons --------------------------------------------------------------


def _metric_names(run: StoredRun, task: str, wanted: Sequence[str]) -> list[str]:
    ts = run.record.task_summary(task)
    names = list(ts.metrics) if ts else []
    scored = {k for s in run.samples if s.task == task for k in (s.scores or {})}
    out: list[str] = []
    for w in wanted:
        if w == "all":
            out += [m for m in names if m in scored]
        elif w == "primary":
            out += [ts.primary] if ts and ts.primary else []
        elif w in names:
            out.append(w)
        else:
            raise ConfigError(
                f"Task {task!r} has no metric {w!r} in run {run.record.id}.",
                hint=f"Its metrics: {', '.join(names) or 'none'}.",
            )
    if not out:
        raise ConfigError(f"Run {run.record.id} has no scores for task {task!r}.")
    return list(dict.fromkeys(out))


def _verdict(rows: Sequence[GateRow]) -> Verdict:
    if any(r.verdict == "fail" for r in rows):
        return "fail"
    return "pass" if rows and all(r.verdict == "pass" for r in rows) else "inconclusive"


def _summary(verdict: Verdict, rows: Sequence[GateRow], m: float) -> str:
    bad = [f"{r.task}/{r.metric}" for r in rows if r.verdict == verdict]
    if verdict == "pass":
        on = ", ".join(bad) if len(bad) <= 5 else f"all {len(bad)} tasks and metrics"
        return f"PASS: not worse than the baseline by more than {m:g} on {on}"
    if verdict == "fail":
        return f"FAIL: worse than the baseline by more than {m:g} on {', '.join(bad)}"
    needs = [r.items_needed for r in rows if r.verdict == "inconclusive" and r.items_needed]
    most = f"; needs about {max(needs):,} items" if needs else ""
    return f"INCONCLUSIVE: not enough items to tell on {', '.join(bad)}{most}"


def judge(
    baseline: StoredRun,
    candidate: StoredRun,
    *,
    max_drop: float,
    metrics: Sequence[str] = ("primary",),
    tasks: Sequence[str] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    seed: int = 0,
    max_error_growth: Mapping[str, float] | None = None,
) -> GateResult:
    """The gate's verdict on two stored runs (the runs' comparable methodology is checked).
    ``max_error_growth`` (error type -> allowed growth of its rate, e.g.
    ``{"calculation_slip": 0.02}``) adds one row per task whose rule can give the type: the
    rate of "failed with this type" may not grow by more than that, tested like a metric."""
    if not max_drop > 0:
        raise ConfigError(f"The allowed drop must be positive, got {max_drop!r}.")
    tasks = list(tasks or [t for t in candidate.record.tasks if t in baseline.record.tasks])
    problems = [x for t in tasks for x in methodology_differences(baseline, candidate, t)]
    if problems or not tasks:
        raise ConfigError(
            "The runs are not comparable: "
            + ("; ".join(problems[:5]) or "no task in common")
            + ".",
            hint="A gate compares the same items measured the same way: run both "
            "models with the same suite and settings (--limit, --seed, prompts, decoding).",
        )
    pairs = [
        pair(baseline, candidate, t, m) for t in tasks for m in _metric_names(baseline, t, metrics)
    ]
    rules = gate_error_rules(baseline, tasks, max_error_growth or {})
    a = alpha / (len(pairs) + len(rules))
    rows = [gate_row(p, max_drop=max_drop, alpha=a, power=power, seed=seed) for p in pairs]
    for t, et, m in rules:  # judged on "free of the type": growth of m is a drop of m
        p = error_pair(baseline, candidate, t, et)
        free = replace(p, a=1.0 - p.a, b=1.0 - p.b)
        rows.append(error_gate_row(gate_row(free, max_drop=m, alpha=a, power=power, seed=seed), et))
    verdict = _verdict(rows)
    return GateResult(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        summary=_summary(verdict, rows, max_drop),
        baseline=RunUsed(run_id=baseline.record.id, model=baseline.record.model, source="given"),
        candidate=RunUsed(run_id=candidate.record.id, model=candidate.record.model, source="given"),
        max_drop=max_drop,
        alpha=alpha,
        power=power,
        comparisons=len(rows),
        confidence=1 - a,
        size=None,
        rows=rows,
    )


# -- resolving and running the two sides ------------------------------------------------


def _stored(store: Store, ref: str) -> StoredRun | None:
    """The stored run ``ref`` names (``latest``, an id or a prefix starting with the date);
    None when ``ref`` is a model spec."""
    if ref != "latest" and not _RUN_REF.fullmatch(ref):
        return None
    rec = store.get_run(ref)
    if rec.status != "finished":
        raise ConfigError(
            f"Run {rec.id} is {rec.status}, not finished.",
            hint=f"Finish it first: calipers run --resume {rec.id}",
        )
    return StoredRun(rec, tuple(store.get_samples(rec.id)))


def _template(config: GateConfig, given: StoredRun | None) -> dict[str, Any]:
    """Settings of the run(s) to make: the given run's (its items, prompts, decoding), then
    the options set explicitly."""
    data: dict[str, Any] = {}
    tasks = config.suite
    if given is not None:
        try:
            data = RunConfig.model_validate(given.record.config).model_dump(mode="json")
        except ValidationError:
            data = {}
        data["study"] = None
        tasks = tasks or tuple(data.get("tasks") or given.record.tasks)
    if not tasks:
        raise ConfigError(
            "Which suite? --suite is needed unless a side is a stored run.",
            hint="calipers gate --suite dyn_arithmetic --baseline MODEL ...",
        )
    return {**data, **config.run_options, "tasks": tuple(tasks)}


def _side(
    store: Store,
    ref: str,
    run: StoredRun | None,
    template: dict[str, Any] | None,
    provider: ModelProvider | None,
    base_url: str | None,
    reuse: bool,
) -> Side:
    if run is not None:
        return Side(ref, run, None, "given")
    assert template is not None
    data = {**template, "model": ref}
    if base_url:
        data["model_options"] = {**(data.get("model_options") or {}), "base_url": base_url}
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"Invalid run option for {ref}: {e.errors()[0]['msg']}") from None
    plan = make_plan(config, provider)
    old = find_reusable(store, plan) if reuse else None
    return Side(ref, old, None, "reused") if old else Side(ref, None, plan, "ran")


def _items(side: Side, task: str) -> tuple[int, int]:
    """(items, metrics per task) for the size check."""
    if side.plan is not None:
        pt = next(p for p in side.plan.tasks if p.task.name == task)
        return len(pt.samples), sum(len(s.metrics) for s in pt.task.scorers)
    assert side.run is not None
    m = side.run.methodology.tasks[task]
    ts = side.run.record.task_summary(task)
    return m.n_items, (len(ts.metrics) if ts else 0) or 1


def _tasks(config: GateConfig, base: Side, cand: Side) -> tuple[str, ...]:
    planned = cand.plan or base.plan
    if planned is not None:
        names = [pt.task.name for pt in planned.tasks]
    elif config.suite:
        names = [t.name for s in config.suite for t in resolve_task(s)]
    else:
        assert base.run is not None and cand.run is not None
        names = [t for t in cand.run.record.tasks if t in base.run.record.tasks]
    for side, role in ((base, "baseline"), (cand, "candidate")):
        run = side.run
        missing = [t for t in names if run is not None and t not in run.record.tasks]
        if run is not None and missing:
            raise ConfigError(
                f"The {role} run {run.record.id} has no {', '.join(missing)}.",
                hint="Gate on tasks both sides have.",
            )
    return tuple(names)


def prepare_gate(
    config: GateConfig, store: Store, *, providers: Mapping[str, ModelProvider] | None = None
) -> GatePlan:
    """Resolve both sides, plan the runs still to make (or reuse a stored baseline run) and
    check the suite's size. Calls no model."""
    providers = providers or {}
    base_run, cand_run = _stored(store, config.baseline), _stored(store, config.candidate)
    template = None if base_run and cand_run else _template(config, base_run or cand_run)
    base = _side(
        store,
        config.baseline,
        base_run,
        template,
        providers.get(config.baseline),
        config.baseline_base_url,
        reuse=True,
    )
    cand = _side(
        store,
        config.candidate,
        cand_run,
        template,
        providers.get(config.candidate),
        None,
        reuse=False,
    )
    tasks = _tasks(config, base, cand)
    src = cand if cand.plan else base if base.plan else cand
    sizes = {t: _items(src, t) for t in tasks}
    per_task = (
        1
        if config.metrics == ("primary",)
        else (max(n for _, n in sizes.values()) if "all" in config.metrics else len(config.metrics))
    )
    size = size_check(
        {t: n for t, (n, _) in sizes.items()},
        len(tasks) * per_task + len(config.max_error_growth),
        config.max_drop,
        config.alpha,
        config.power,
        config.assumed_discordance,
    )
    return GatePlan(config, base, cand, tasks, size)


async def _ensure(side: Side, store: Store, progress: Progress | None) -> Side:
    if side.plan is None:
        return side
    res = await arun(side.plan.config, store, provider=side.plan.provider, progress=progress)
    rec = store.get_run(res.run_id)
    return Side(side.spec, StoredRun(rec, tuple(store.get_samples(rec.id))), None, "ran")


def _used(side: Side) -> RunUsed:
    assert side.run is not None
    return RunUsed(run_id=side.run.record.id, model=side.run.record.model, source=side.source)


async def run_gate(gp: GatePlan, store: Store, *, progress: Progress | None = None) -> GateResult:
    """Run what is missing (the baseline unless given or reused, the candidate unless given)
    and judge; with ``strict_size`` and a suite too small, refuse before any model call."""
    c = gp.config
    if gp.refused:
        assert gp.size.message is not None
        return GateResult(
            verdict="inconclusive",
            exit_code=EXIT_CODES["inconclusive"],
            summary=f"INCONCLUSIVE (refused, nothing run): {gp.size.message}",
            baseline=None,
            candidate=None,
            max_drop=c.max_drop,
            alpha=c.alpha,
            power=c.power,
            comparisons=gp.size.comparisons,
            confidence=1 - c.alpha / gp.size.comparisons,
            size=gp.size,
            refused=True,
            rows=[],
        )
    base = await _ensure(gp.baseline, store, progress)
    cand = await _ensure(gp.candidate, store, progress)
    assert base.run is not None and cand.run is not None
    seed = int((c.run_options or {}).get("seed", 0) or 0)
    result = judge(
        base.run,
        cand.run,
        max_drop=c.max_drop,
        metrics=c.metrics,
        tasks=gp.tasks,
        alpha=c.alpha,
        power=c.power,
        seed=seed,
        max_error_growth=c.max_error_growth,
    )
    return result.model_copy(
        update={"baseline": _used(base), "candidate": _used(cand), "size": gp.size}
    )


def gate(
    config: GateConfig,
    *,
    store: Store | None = None,
    providers: Mapping[str, ModelProvider] | None = None,
) -> GateResult:
    """:func:`prepare_gate` then :func:`run_gate` (``calipers gate`` without the output)."""
    st = store or Store.open()
    try:
        return asyncio.run(run_gate(prepare_gate(config, st, providers=providers), st))
    finally:
        if store is None:
            st.close()

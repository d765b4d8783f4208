"""``calipers compare``: is run B better than run A on the same items, and by how much?

Every row pairs the two runs item by item, tests the paired difference (McNemar exact for
binary scores, a sign-flip permutation test otherwise), gives the difference with its
interval, an effect size and the minimum detectable effect for that n, and corrects the
p-values across every row compared (Holm by default, Benjamini-Hochberg on request).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calipers._util.seeding import derived_rng
from calipers.analysis._align import Paired, StoredRun, methodology_differences, pair
from calipers.analysis._floors import Floor, floor_flag
from calipers.analysis._verdict import verdict
from calipers.errors import ConfigError
from calipers.stats import adjust, paired_compare
from calipers.store import Store
from calipers.types import Estimate

__all__ = ["ALL_TASKS", "ComparisonRow", "ComparisonSet", "compare", "load_runs"]

Correction = Literal["holm", "bh"]


class ComparisonRow(BaseModel):
    """One comparison: ``b`` against the baseline ``a`` on one task and metric."""

    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    run_a: str
    run_b: str
    model_a: str
    model_b: str
    n: int
    excluded: dict[str, int]
    score_a: Estimate
    score_b: Estimate
    diff: Estimate
    test: str
    p_value: float | None
    p_adjusted: float | None
    effect_size: float | None
    effect_size_name: str
    n_discordant: tuple[int, int] | None
    mde: float | None
    significant: bool
    verdict: str
    flags: list[str] = Field(default_factory=list)


class ComparisonSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    baseline: str
    runs: list[str]
    correction: Correction
    alpha: float
    confidence: float
    seed: int
    forced: bool
    mismatches: list[str]
    rows: list[ComparisonRow]


def load_runs(store: Store, ids: Sequence[str]) -> list[StoredRun]:
    runs = [store.get_run(i) for i in ids]
    if len({r.id for r in runs}) != len(runs):
        raise ConfigError("The same run is listed twice.", hint="Compare different runs.")
    return [StoredRun(r, store=store) for r in runs]  # samples read when needed


def _resolve(runs: Sequence[StoredRun | str], store: Store | None) -> list[StoredRun]:
    if all(isinstance(r, StoredRun) for r in runs):
        return [r for r in runs if isinstance(r, StoredRun)]
    st = store or Store.open()
    try:
        return [r if isinstance(r, StoredRun) else load_runs(st, [r])[0] for r in runs]
    finally:
        if store is None:
            st.close()


def _tasks(base: StoredRun, other: StoredRun, only: Sequence[str] | None) -> list[str]:
    shared = [t for t in base.record.tasks if t in other.record.tasks]
    if only:
        missing = [t for t in only if t not in shared]
        if missing:
            raise ConfigError(
                f"Task(s) {', '.join(missing)} are not in both {base.record.id} and "
                f"{other.record.id}.",
                hint=f"Tasks in both: {', '.join(shared) or 'none'}.",
            )
        return list(only)
    return shared


def _metrics(run: StoredRun, task: str, all_metrics: bool) -> list[str]:
    ts = run.record.task_summary(task)
    names = list(ts.metrics) if ts else []
    primary = ts.primary if ts else None
    if all_metrics:
        return names
    return [primary] if primary else names[:1]


def _row(
    p: Paired, a: StoredRun, b: StoredRun, seed: int, confidence: float, alpha: float
) -> tuple[ComparisonRow, Any]:
    rng = derived_rng(seed, p.task, p.metric)
    res = paired_compare(
        p.a,
        p.b,
        rng=rng,
        confidence=confidence,
        alpha=alpha,
        clusters=list(p.clusters) if p.clusters else None,
    )

    def num(x: float) -> float | None:
        return None if x is None or np.isnan(x) else float(x)

    row = ComparisonRow(
        task=p.task,
        metric=p.metric,
        run_a=a.record.id,
        run_b=b.record.id,
        model_a=a.record.model_name,
        model_b=b.record.model_name,
        n=res.n,
        excluded={
            "only_a": p.only_a,
            "only_b": p.only_b,
            "errors_a": p.errors_a,
            "errors_b": p.errors_b,
        },
        score_a=res.mean_a,
        score_b=res.mean_b,
        diff=res.diff,
        test=res.test,
        p_value=num(res.p_value),
        p_adjusted=None,
        effect_size=num(res.effect_size),
        effect_size_name=res.effect_size_name,
        n_discordant=res.n_discordant,
        mde=num(res.mde),
        significant=False,
        verdict="",
    )
    return row, res


ALL_TASKS = "(all tasks)"


def _pooled(pairs: Sequence[Paired]) -> Paired | None:
    """Every task's primary-metric items pooled (each item weighs the same), when there are
    several tasks and every primary metric is binary: an overall answer to "is B better"."""
    if len(pairs) < 2 or not all(
        np.isin(np.concatenate([p.a, p.b]), (0.0, 1.0)).all() for p in pairs
    ):
        return None
    return Paired(
        task=ALL_TASKS,
        metric="primary",
        ids=tuple(f"{p.task}/{i}" for p in pairs for i in p.ids),
        a=np.concatenate([p.a for p in pairs]),
        b=np.concatenate([p.b for p in pairs]),
        clusters=None,
        only_a=sum(p.only_a for p in pairs),
        only_b=sum(p.only_b for p in pairs),
        errors_a=sum(p.errors_a for p in pairs),
        errors_b=sum(p.errors_b for p in pairs),
    )


def compare(
    runs: Sequence[StoredRun | str],
    *,
    store: Store | None = None,
    tasks: Sequence[str] | None = None,
    all_metrics: bool = False,
    correction: Correction = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    seed: int = 0,
    force: bool = False,
    floors: Mapping[tuple[str, str], Floor] | None = None,
) -> ComparisonSet:
    """Compare every run after the first against the first (the baseline). Runs are stored
    runs or run ids (looked up in ``store``, by default the default store). ``floors``
    (:func:`format_floors`) flag differences smaller than a model's format noise floor."""
    runs = _resolve(runs, store)
    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs.", hint="calipers compare RUN_A RUN_B")
    base, rows, results, mismatches = runs[0], [], [], []
    for other in runs[1:]:
        primaries: list[Paired] = []
        for task in _tasks(base, other, tasks):
            mismatches += methodology_differences(base, other, task)
            for i, metric in enumerate(_metrics(base, task, all_metrics)):
                p = pair(base, other, task, metric)
                primaries += [p] if i == 0 else []
                row, res = _row(p, base, other, seed, confidence, alpha)
                rows.append(row)
                results.append(res)
        overall = _pooled(primaries)
        if overall is not None:
            row, res = _row(overall, base, other, seed, confidence, alpha)
            rows.append(row)
            results.append(res)
    if not rows:
        raise ConfigError("The runs have no task in common; there is nothing to compare.")
    if mismatches and not force:
        raise ConfigError(
            "These runs are not comparable: "
            + "; ".join(mismatches[:5])
            + (f" (and {len(mismatches) - 5} more)" if len(mismatches) > 5 else "")
            + ".",
            hint="Scores measured differently cannot be compared. Re-run with the same "
            "settings, or pass --force to compare anyway (the output is flagged).",
        )
    adjusted = adjust(
        [r.p_value if r.p_value is not None else float("nan") for r in rows], method=correction
    )
    keys = {r.record.id: r.methodology.model.key() for r in runs}
    final = []
    for row, res, p_adj in zip(rows, results, adjusted, strict=True):
        flag = floor_flag(
            floors or {},
            row.task,
            row.diff.value,
            [keys[row.run_a], keys[row.run_b]],
            row.model_a,
        )
        if flag and not np.isnan(row.diff.value):
            row = row.model_copy(update={"flags": [flag]})
        sig = bool(p_adj is not None and not np.isnan(p_adj) and p_adj < alpha)
        row = row.model_copy(
            update={
                "p_adjusted": None if np.isnan(p_adj) else float(p_adj),
                "significant": sig,
            }
        )
        final.append(
            row.model_copy(update={"verdict": verdict(row, res, sig, confidence, len(rows))})
        )
    return ComparisonSet(
        baseline=base.record.id,
        runs=[r.record.id for r in runs],
        correction=correction,
        alpha=alpha,
        confidence=confidence,
        seed=seed,
        forced=bool(mismatches) and force,
        mismatches=mismatches,
        rows=final,
    )

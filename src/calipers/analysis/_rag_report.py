"""What a RAG stress test found: each outcome per arm with its interval and its paired
difference from the clean arm, and the context-fill curve with its knee.

Input: the stored runs of one study (``calipers rag stress``), the clean arm first. Every
difference is paired by item (each item is one question, so pairing is clustering by
question), and p-values are Holm-corrected across the arms for each outcome. The fill curve
is fitted on the per-item outcomes at their fill level (clustered by question, which appears
once per level) with :func:`calipers.stats.knee`, so a knee needs two levels on each side; the
realised fill, within a word of each level, is reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import StoredRun, pair
from calipers.analysis._judge_line import judge_calibration
from calipers.errors import ConfigError
from calipers.stats import adjust, knee, paired_compare, summarize
from calipers.store import RunRecord
from calipers.tasks.rag import RagArm
from calipers.types import Estimate

__all__ = [
    "OUTCOMES",
    "ArmRow",
    "FillCurve",
    "KneeFit",
    "OutcomeCell",
    "RagReport",
    "rag_report",
]

# Outcomes in report order; an outcome a run never scored (counterfactual_followed outside the
# counterfactual arms) is left out of that arm's row.
OUTCOMES = (
    "correct",
    "abstained",
    "unsupported",
    "distractor_adopted",
    "counterfactual_followed",
    "faithfulness",  # the claim judge's (``--judge``): marked uncalibrated until calibrated
)
# Which way is worse, for the knee test of each outcome along the fill curve.
_WORSE: dict[str, Any] = {"correct": "down", "unsupported": "up", "abstained": "up"}


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OutcomeCell(_Out):
    score: Estimate
    diff: Estimate | None  # paired: this arm minus the clean arm, on the items both scored
    p_value: float | None
    p_adjusted: float | None  # Holm across the arms, per outcome
    n_paired: int


class ArmRow(_Out):
    label: str
    factor: str
    arm: dict[str, Any]
    run_id: str
    n_items: int
    n_errors: int
    outcomes: dict[str, OutcomeCell]
    realised: dict[str, float]  # mean realised noise ratio / fill / gold shown over items


class KneeFit(_Out):
    """:class:`calipers.stats.Knee` of one outcome along the fill curve."""

    knee: Estimate
    slope_before: Estimate
    slope_after: Estimate
    slope_change: Estimate
    p_value: float
    test: str
    verdict: str
    accelerates: bool
    n_clusters: int


class FillCurve(_Out):
    outcome: str
    levels: list[float]  # nominal fill levels, in order
    realised: list[float]  # mean realised fill per level
    scores: list[Estimate]  # the outcome's rate per level
    knee: KneeFit | None  # None with too few levels or questions
    note: str | None = None


class RagReport(_Out):
    study: str | None
    task: str
    model: str
    clean: ArmRow
    arms: list[ArmRow]
    fill: list[FillCurve]
    alpha: float
    notes: list[str]
    # the claim judge's calibration status (calipers.analysis.judge_calibration) when a judge
    # scored faithfulness; ``judge["calibrated"]`` false: its number is marked uncalibrated
    judge: dict[str, Any] | None = None


def _factor(arm: RagArm) -> str:
    if arm.fill is not None:
        return "fill"
    if arm.retriever != "oracle":
        return "retriever" if (not arm.index_gold or arm.query_noise) else "k"
    if arm.order:
        return "order"
    if arm.position:
        return "position"
    if arm.gold == "drop":
        return "gold"
    return "noise" if arm.noise else "clean"


def _arm_of(run: StoredRun, task: str) -> RagArm:
    data = run.methodology.tasks[task].rag_arm or {}
    return RagArm.model_validate(data)


def _realised(run: StoredRun, task: str) -> dict[str, float]:
    keys: dict[str, list[float]] = {}
    for s in run.samples:
        info = (s.score_details or {}).get("rag_arm") if s.task == task else None
        for k, v in (info or {}).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                keys.setdefault(k, []).append(float(v))
    return {k: float(np.mean(v)) for k, v in sorted(keys.items())}


def _metrics(run: StoredRun, task: str) -> list[str]:
    seen = {m for s in run.samples if s.task == task and s.scores for m in s.scores}
    return [m for m in OUTCOMES if m in seen]


def _cell(
    clean: StoredRun,
    run: StoredRun,
    task: str,
    metric: str,
    seed: int,
    confidence: float,
    paired: bool,
) -> OutcomeCell | None:
    """``metric`` of ``run``; with ``paired`` (the clean arm scored it too) its difference."""
    own = pair(run, run, task, metric)
    if not len(own.ids):  # every item that would have it ended in an error: no row, no NaN
        return None
    score = summarize(
        own.a,
        clusters=list(own.clusters) if own.clusters else None,
        rng=derived_rng(seed, "rag", run.record.id, metric),
        confidence=confidence,
    )
    if run is clean or not paired:
        return OutcomeCell(score=score, diff=None, p_value=None, p_adjusted=None, n_paired=0)
    p = pair(clean, run, task, metric)
    if not len(p.ids):
        return OutcomeCell(score=score, diff=None, p_value=None, p_adjusted=None, n_paired=0)
    res = paired_compare(
        p.a,
        p.b,
        rng=derived_rng(seed, "rag-diff", run.record.id, metric),
        confidence=confidence,
        clusters=list(p.clusters) if p.clusters else None,
    )
    pv = None if math.isnan(res.p_value) else float(res.p_value)
    return OutcomeCell(score=score, diff=res.diff, p_value=pv, p_adjusted=None, n_paired=res.n)


def _row(
    clean: StoredRun, run: StoredRun, task: str, seed: int, confidence: float, in_clean: set[str]
) -> ArmRow:
    arm = _arm_of(run, task)
    samples = [s for s in run.samples if s.task == task]
    return ArmRow(
        label=arm.describe(),
        factor=_factor(arm),
        arm=arm.model_dump(exclude_defaults=True),
        run_id=run.record.id,
        n_items=len({s.sample_id for s in samples}),
        n_errors=sum(s.error is not None for s in samples),
        outcomes={
            m: c
            for m in _metrics(run, task)
            if (c := _cell(clean, run, task, m, seed, confidence, m in in_clean)) is not None
        },
        realised=_realised(run, task),
    )


def _holm(rows: list[ArmRow]) -> list[ArmRow]:
    """Holm-adjust each outcome's p-values across the arms that have one."""
    out = [r.model_copy(update={"outcomes": dict(r.outcomes)}) for r in rows]
    for metric in OUTCOMES:
        where = [(i, r.outcomes[metric]) for i, r in enumerate(out) if metric in r.outcomes]
        where = [(i, c) for i, c in where if c.p_value is not None]
        if not where:
            continue
        adjusted = adjust([c.p_value or 0.0 for _, c in where], method="holm")
        for (i, c), p in zip(where, adjusted, strict=True):
            out[i].outcomes[metric] = c.model_copy(update={"p_adjusted": float(p)})
    return out


def _item_fill(details: dict[str, Any] | None, level: float) -> float:
    """The item's realised fill, as the arm recorded it (the nominal level if it did not)."""
    return float(((details or {}).get("rag_arm") or {}).get("fill", level))


def _fill_curve(
    runs: Sequence[StoredRun], task: str, metric: str, seed: int, confidence: float
) -> FillCurve | None:
    points: list[tuple[float, StoredRun]] = []
    for run in runs:
        arm = _arm_of(run, task)
        if arm.fill is not None and metric in _metrics(run, task):
            points.append((arm.fill, run))
    if not points:
        return None
    points.sort(key=lambda t: t[0])
    xs: list[float] = []
    ys: list[float] = []
    qs: list[str] = []
    levels, realised, scores = [], [], []
    for level, run in points:
        own = [
            s
            for s in run.samples
            if s.task == task and s.error is None and s.scores and metric in s.scores
        ]
        if not own:  # every item of this level ended in an error: the level is left out
            continue
        fills = [_item_fill(s.score_details, level) for s in own]
        xs += [level] * len(fills)  # the fit uses the levels (realised: within a word of them)
        ys += [float(s.scores[metric]) for s in own if s.scores]
        qs += [s.cluster or s.sample_id for s in own]
        levels.append(level)
        realised.append(float(np.mean(fills)))
        scores.append(
            summarize(
                np.array([s.scores[metric] for s in own if s.scores], dtype=float),
                rng=derived_rng(seed, "rag-fill", run.record.id, metric),
                confidence=confidence,
            )
        )
    fit: KneeFit | None = None
    note = None
    if len(levels) >= 4 and len(set(qs)) >= 5:
        k = knee(
            xs,
            ys,
            clusters=qs,
            rng=derived_rng(seed, "rag-knee", task, metric),
            confidence=confidence,
            worse=_WORSE.get(metric, "down"),
        )
        fit = KneeFit(
            knee=k.knee,
            slope_before=k.slope_before,
            slope_after=k.slope_after,
            slope_change=k.slope_change,
            p_value=k.p_value,
            test=k.test,
            verdict=k.verdict,
            accelerates=k.accelerates,
            n_clusters=k.n_clusters,
        )
    else:
        note = "a knee needs at least 4 fill levels and 5 questions"
    return FillCurve(
        outcome=metric, levels=levels, realised=realised, scores=scores, knee=fit, note=note
    )


def rag_report(
    runs: Sequence[StoredRun],
    *,
    saved: Sequence[RunRecord] = (),
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
) -> RagReport:
    """The report of one study's runs, the clean arm first (``load_study`` order); ``saved``
    are other stored runs, where a calibration of the claim judge may be on record."""
    if not runs:
        raise ConfigError("A RAG stress report needs the study's runs.")
    clean, task = runs[0], runs[0].record.tasks[0]
    if _factor(_arm_of(clean, task)) != "clean":
        raise ConfigError(
            f"The first run of the study ({clean.record.id}) is not the clean arm.",
            hint="Pass the runs in load_study order: the clean arm first.",
        )
    in_clean = set(_metrics(clean, task))  # the outcomes an arm can be paired on
    rows = _holm([_row(clean, r, task, seed, confidence, in_clean) for r in runs])
    curves = [
        c
        for m in ("correct", "unsupported", "abstained")
        if (c := _fill_curve(runs, task, m, seed, confidence)) is not None
    ]
    notes = []
    if any(r.n_errors for r in rows):
        bad = ", ".join(f"{r.label} ({r.n_errors})" for r in rows if r.n_errors)
        notes.append(f"Items that ended in an error are left out of their arm: {bad}.")
    judge = judge_calibration(clean.record, task, [*(r.record for r in runs), *saved])
    if judge is not None and not judge.get("calibrated"):
        notes.append(
            f"faithfulness is the judge {judge.get('judge')}'s number and is uncalibrated: "
            f"calipers judge-calibrate {clean.record.id} --planted (dyn_rag) or --labels FILE."
        )
    return RagReport(
        study=(clean.record.config or {}).get("study"),
        task=task,
        model=clean.record.model_name,
        clean=rows[0],
        arms=rows[1:],
        fill=curves,
        alpha=alpha,
        notes=notes,
        judge=judge,
    )

"""Judge-corrected scores: prediction-powered inference (PPI++, ``calipers.stats.ppi_mean``)
over a judge-scored run. The judge scored all N + n judged items; people labelled n of them
(a labels file or a review campaign, :func:`campaign_labels`). The corrected estimate's
interval includes the judge's error (see docs/judge-corrected.md). Reported beside the
judge-only figure (the judge's mean over every judged item, whose interval ignores its error)
and the human-only one (the n labels alone), with the width ratio corrected / human-only.

Two runs (``calipers compare A B --judge-corrected``): when people labelled the same items
of both runs, PPI++ on the per-item differences (which uses the pairing); otherwise each run
is corrected on its own and ``ppi_difference`` combines them (independent arms).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers.analysis._judge_calibration import (
    JudgeMode,
    Key,
    Labels,
    _judged,
    _norm,
    human_labels,
    judge_spec,
    labels_name,
)
from calipers.stats import PPIResult, ppi_difference, ppi_mean, unpaired_difference
from calipers.store import RunRecord, SampleRecord
from calipers.types import Estimate

__all__ = [
    "JudgeCorrected",
    "JudgeCorrectedComparison",
    "corrected_rows",
    "judge_corrected",
    "judge_corrected_comparison",
]


class JudgeCorrected(BaseModel):
    """One run's judge-based score three ways: the judge alone over all its ``n + N_unlabelled``
    judged items, the ``n`` human labels alone, and PPI++ combining both. ``width_ratio`` is
    the corrected interval's width over the human-only one (below 1: the judge helped)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    task: str
    scorer: str
    judge: str
    mode: JudgeMode
    labels: str
    n: int
    n_unlabelled: int
    n_labels_unmatched: int
    judge_only: Estimate
    human_only: Estimate
    corrected: Estimate
    lam: float
    se: float
    width_ratio: float | None
    caveats: list[str]


class JudgeCorrectedComparison(BaseModel):
    """B - A of two runs' judge-based scores: judge-only, human-only and corrected."""

    model_config = ConfigDict(extra="forbid")

    a: JudgeCorrected
    b: JudgeCorrected
    pairing: Literal["paired", "independent"]
    n: int
    n_unlabelled: int
    judge_only: Estimate
    human_only: Estimate
    corrected: Estimate
    width_ratio: float | None


def _width(e: Estimate) -> float:
    return e.high - e.low


def _ratio(corrected: Estimate, human: Estimate) -> float | None:
    w = _width(human)
    if corrected.is_empty or human.is_empty or not math.isfinite(w) or w <= 0:
        return None
    return _width(corrected) / w


class _Arm:
    """A run's judge scores on the label scale, split into labelled and unlabelled items."""

    def __init__(
        self,
        run: RunRecord,
        samples: Sequence[SampleRecord],
        labels: Labels,
        task: str | None,
        scorer: str | None,
        source: str | None,
    ) -> None:
        self.task, spec, self.mode, scale = judge_spec(run, task, scorer)
        self.run, self.scorer = run, str(spec["name"])
        self.judge = str(spec.get("args", {}).get("judge"))
        self.source = labels_name(labels, source)
        recs = [r for r in samples if r.task == self.task]
        judged = _judged(recs, self.scorer, self.mode)
        human = human_labels(labels, self.task, self.mode, scale)
        self.y = {k: _norm(h, self.mode, scale) for k, h in human.items() if k in judged}
        self.yhat = {k: _norm(v["value"], self.mode, scale) for k, v in judged.items()}
        self.unmatched = len(human) - len(self.y)

    def labelled(self) -> list[Key]:
        return sorted(self.y)

    def unlabelled(self) -> list[float]:
        return [v for k, v in sorted(self.yhat.items()) if k not in self.y]

    def ppi(self, confidence: float, lam: float | None = None) -> PPIResult:
        keys = self.labelled()
        return ppi_mean(
            [self.y[k] for k in keys],
            [self.yhat[k] for k in keys],
            self.unlabelled(),
            confidence=confidence,
            lam=lam,
        )

    def report(self, r: PPIResult) -> JudgeCorrected:
        caveats = []
        if r.estimate.method == "human-only-small-n":
            caveats.append(
                f"{r.estimate.n} human labels (fewer than 30, or fewer than 10 of a 0/1 "
                "value): the estimate is the human labels alone; label more items"
            )
        if self.unmatched:
            caveats.append(f"{self.unmatched} labels name samples the judge did not score")
        caveats.append(
            "valid when the labelled items are a uniform random sample of the judged ones"
        )
        return JudgeCorrected(
            run_id=self.run.id,
            task=self.task,
            scorer=self.scorer,
            judge=self.judge,
            mode=self.mode,
            labels=self.source,
            n=len(self.y),
            n_unlabelled=r.n_unlabelled,
            n_labels_unmatched=self.unmatched,
            judge_only=r.naive_judge,
            human_only=r.human_only,
            corrected=r.estimate,
            lam=r.lam,
            se=r.se,
            width_ratio=_ratio(r.estimate, r.human_only),
            caveats=caveats,
        )


def judge_corrected(
    run: RunRecord,
    samples: Sequence[SampleRecord],
    labels: Labels,
    *,
    task: str | None = None,
    scorer: str | None = None,
    confidence: float = 0.95,
    source: str | None = None,
    lam: float | None = None,
) -> JudgeCorrected:
    """The run's judge-based score corrected by the human ``labels`` (a labels file or
    ``{(sample_id, epoch): (label, where)}``, named ``source``) with PPI++ (``lam=1``: classic
    PPI, see :func:`calipers.stats.ppi_mean`). Scale judges are read on the normalised [0, 1]
    scale their metric uses."""
    arm = _Arm(run, samples, labels, task, scorer, source)
    return arm.report(arm.ppi(confidence, lam))


def judge_corrected_comparison(
    a: tuple[RunRecord, Sequence[SampleRecord], Labels, str | None],
    b: tuple[RunRecord, Sequence[SampleRecord], Labels, str | None],
    *,
    task: str | None = None,
    scorer: str | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> JudgeCorrectedComparison:
    """B - A, each given as ``(run, samples, labels, source)``. Paired PPI++ on the per-item
    differences when both runs have human labels on the same items (all labelled items of
    each, and every judged item of one judged in the other); else independent arms."""
    arm_a = _Arm(*a[:3], task, scorer, a[3])
    arm_b = _Arm(*b[:3], arm_a.task if task is None else task, scorer, b[3])
    ra, rb = arm_a.ppi(confidence), arm_b.ppi(confidence)
    rep_a, rep_b = arm_a.report(ra), arm_b.report(rb)
    common = sorted(set(arm_a.yhat) & set(arm_b.yhat))
    labelled = sorted(set(arm_a.y) & set(arm_b.y))
    paired = bool(labelled) and set(arm_a.y) == set(arm_b.y) == set(labelled)
    if paired:
        rest = [k for k in common if k not in arm_a.y]
        r = ppi_mean(
            [arm_b.y[k] - arm_a.y[k] for k in labelled],
            [arm_b.yhat[k] - arm_a.yhat[k] for k in labelled],
            [arm_b.yhat[k] - arm_a.yhat[k] for k in rest],
            confidence=confidence,
        )
        corrected, human, judge = r.estimate, r.human_only, r.naive_judge
    else:
        rng = np.random.default_rng(seed)

        def diff(x: Sequence[float], y: Sequence[float]) -> Estimate:
            return unpaired_difference(x, y, rng=rng, confidence=confidence)

        small = "human-only-small-n" in (ra.estimate.method, rb.estimate.method)
        human = diff([arm_b.y[k] for k in arm_b.labelled()], [arm_a.y[k] for k in arm_a.labelled()])
        judge = diff(list(arm_b.yhat.values()), list(arm_a.yhat.values()))
        corrected = human if small else ppi_difference(rb, ra)
    return JudgeCorrectedComparison(
        a=rep_a,
        b=rep_b,
        pairing="paired" if paired else "independent",
        n=len(labelled) if paired else rep_a.n + rep_b.n,
        n_unlabelled=(
            len(common) - len(labelled) if paired else rep_a.n_unlabelled + rep_b.n_unlabelled
        ),
        judge_only=judge,
        human_only=human,
        corrected=corrected,
        width_ratio=_ratio(corrected, human),
    )


def corrected_rows(rep: JudgeCorrected | JudgeCorrectedComparison) -> list[dict[str, Any]]:
    """Rows for printing: name, estimate, human labels used (n), judge labels used."""
    n, big_n = rep.n, rep.n_unlabelled
    return [
        {"name": "judge only", "estimate": rep.judge_only, "n": 0, "judge": n + big_n},
        {"name": "human only", "estimate": rep.human_only, "n": n, "judge": 0},
        {"name": "judge-corrected (PPI++)", "estimate": rep.corrected, "n": n, "judge": n + big_n},
    ]

"""Contamination family 1: the perturbation gap, against a control that cannot be memorised.

A model that memorised a benchmark's items (question, options in their order, answer letter)
loses some of that advantage when the surface form changes while the answer stays right:
the options shuffled, or one wrong option replaced by "None of the other choices". But a
model may also simply handle the changed form worse. So the same perturbations are applied
to a control task whose items are generated fresh (``dyn_dates_mc`` by default: they cannot
have been seen in training), and the evidence is the difference in differences:

    (benchmark: perturbed - original) - (control: perturbed - original)

A clearly negative value says the benchmark items lose more from the change of surface form
than fresh items do -- what memorisation predicts. It cannot prove memorisation (the
benchmark may be harder in a way that interacts with the perturbation), and a value near zero
does not prove the model is clean (memorised knowledge of the answer text survives a
shuffle; the n-gram and probe families look at that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from calipers.analysis import StoredRun, sensitivity
from calipers.types import Estimate

__all__ = ["GapRow", "PerturbationGapReport", "perturbation_gap"]

CAVEAT = (
    "A drop on the benchmark that fresh control items do not show is what memorised surface "
    "form predicts; it is evidence, not proof (the benchmark may interact with the change "
    "differently for other reasons). No drop does not show the model is clean: a memorised "
    "answer text survives shuffling."
)


class GapRow(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    perturbation: str
    benchmark_gap: Estimate  # paired, perturbed - original
    control_gap: Estimate | None
    excess_drop: Estimate | None  # benchmark gap - control gap
    verdict: str


class PerturbationGapReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    control_task: str | None
    model: str
    metric: str
    rows: list[GapRow]
    caveat: str = CAVEAT
    skipped: str | None = None


def _difference(a: Estimate, b: Estimate) -> Estimate:
    """``a - b`` for two independent estimates, normal approximation: each standard error
    read from its own interval (half-width / z)."""
    z = float(sps.norm.ppf(0.5 + a.confidence / 2))
    se = math.hypot((a.high - a.low) / (2 * z), (b.high - b.low) / (2 * z))
    d = a.value - b.value
    return Estimate(d, d - z * se, d + z * se, min(a.n, b.n), "difference-normal", a.confidence)


def _verdict(bench: Estimate, excess: Estimate | None) -> str:
    if excess is None:
        return "no control: a drop may only mean the model handles the new form worse"
    if excess.high < 0:
        return (
            f"benchmark items lose {-100 * excess.value:.1f} points more than fresh "
            "items: evidence of memorised surface form"
        )
    if excess.low > 0:
        return "fresh items lose more than benchmark items: no sign of memorisation"
    return (
        f"no detectable excess drop (interval {100 * excess.low:.1f} to "
        f"{100 * excess.high:.1f} points)"
    )


def perturbation_gap(
    bench: Sequence[StoredRun],
    control: Sequence[StoredRun] | None,
    *,
    seed: int = 0,
) -> PerturbationGapReport:
    """``bench``: the benchmark's original run then its perturbed runs (a study with the
    ``perturbation_gap`` axis); ``control``: the same for the control task, or None."""
    task = bench[0].record.tasks[0]
    b = sensitivity(bench, task, seed=seed)
    c = sensitivity(control, control[0].record.tasks[0], seed=seed) if control else None
    control_rows = {r.label: r for r in c.rows[1:]} if c else {}
    rows = []
    for r in b.rows[1:]:
        gap = r.diff if r.diff is not None else Estimate.empty()
        cr = control_rows.get(r.label)
        cgap = cr.diff if cr else None
        excess = _difference(gap, cgap) if cgap is not None else None
        rows.append(
            GapRow(
                perturbation=r.label,
                benchmark_gap=gap,
                control_gap=cgap,
                excess_drop=excess,
                verdict=_verdict(gap, excess),
            )
        )
    return PerturbationGapReport(
        task=task,
        control_task=control[0].record.tasks[0] if control else None,
        model=bench[0].record.model_name,
        metric=b.metric,
        rows=rows,
    )

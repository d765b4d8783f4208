"""The line reports print next to a judge-scored task's scores: the judge's stored agreement
with people, or that it was not measured. Apart from the calibration itself so that showing a
run does not import the statistics that measuring agreement needs."""

from __future__ import annotations

from calipers.store import RunRecord
from calipers.types import Estimate

__all__ = ["JUDGE_SCORERS", "judge_agreement_line"]

JUDGE_SCORERS = ("llm_judge", "llm_judge_pairwise")

_NAMES = {
    "cohens_kappa": "Cohen's kappa",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha (ordinal)",
}


def judge_agreement_line(run: RunRecord, task: str) -> str | None:
    """One line for reports next to a judge-scored task's scores: its stored judge-human
    agreement, or that it was not measured; None when no judge scored ``task``."""
    scorers = run.methodology.get("tasks", {}).get(task, {}).get("scorers", [])
    if not any(s.get("name") in JUDGE_SCORERS for s in scorers):
        return None
    cal = ((run.summary.judge_calibration if run.summary else None) or {}).get(task)
    if not cal:
        return (
            f"judge-human agreement: not measured (calipers judge-calibrate {run.id} --labels FILE)"
        )
    # the report is stored in the run summary as JSON (types cannot hold the analysis type)
    est = Estimate.from_dict(cal["agreement"])
    return (
        f"judge-human agreement: {_NAMES.get(cal['statistic'], cal['statistic'])} "
        f"{est.format()} (n={est.n} labelled items, judge {cal['judge']})"
    )

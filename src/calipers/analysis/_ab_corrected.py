"""The A/B win rate corrected by people: prediction-powered inference (PPI++,
``calipers.stats.ppi_mean``) on shadow traffic. A pairwise judge scored N + n requests (the
probability that the candidate's answer is preferred: 1, 0 or 0.5); people compared the two
answers of n of them (a pairwise review campaign made from the same traffic). The corrected
win rate's interval includes the judge's error, which the judge-only figure ignores.

This is a fixed-sample estimate at the moment it is computed, next to ``calipers ab``'s
always-valid decision, not a replacement for it: looking again later and stopping when it
looks good would break its coverage.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from calipers.errors import DataError
from calipers.stats import ppi_mean
from calipers.types import Estimate

__all__ = ["ABJudgeCorrected", "ab_judge_corrected"]


class ABJudgeCorrected(BaseModel):
    """The candidate's win rate over the baseline three ways: the judge alone over every
    judged request, the ``n`` human comparisons alone, and PPI++ combining both."""

    model_config = ConfigDict(extra="forbid")

    labels: str
    n: int
    n_unlabelled: int
    n_labels_unmatched: int
    judge_only: Estimate
    human_only: Estimate
    corrected: Estimate
    lam: float
    width_ratio: float | None
    caveats: list[str]


def ab_judge_corrected(
    judge: Mapping[str, float],
    human: Mapping[str, float],
    *,
    labels: str,
    confidence: float = 0.95,
) -> ABJudgeCorrected:
    """``judge``: request (pair id) -> the pairwise judge's P(candidate preferred), NaN when it
    could not score; ``human``: pair id -> 1 (people preferred the candidate), 0 (the
    baseline) or 0.5 (a tie). Labels on requests the judge did not score are counted, not
    used."""
    scored = {k: float(v) for k, v in judge.items() if not math.isnan(v)}
    keys = sorted(k for k in human if k in scored)
    if not keys:
        raise DataError(
            f"None of the {len(human)} human comparisons in {labels} is on a request the "
            "pairwise judge scored.",
            hint="Make the campaign from the same traffic (calipers review create NAME "
            "--from traffic --kind pairwise) and score it with --scorer llm_judge_pairwise.",
        )
    rest = [v for k, v in sorted(scored.items()) if k not in human]
    r = ppi_mean([human[k] for k in keys], [scored[k] for k in keys], rest, confidence=confidence)
    caveats = []
    failed = len(judge) - len(scored)
    if failed:  # left out, never counted as a loss
        caveats.append(f"{failed} requests the judge could not score are left out")
    if r.estimate.method == "human-only-small-n":
        caveats.append(
            f"{len(keys)} human comparisons (fewer than 30): the estimate is theirs alone; "
            "label more requests"
        )
    caveats.append("valid when the labelled requests are a uniform random sample of the judged")
    caveats.append("a fixed-sample estimate now, not an always-valid sequence like the decision")
    hw = r.human_only.high - r.human_only.low
    ratio = (
        (r.estimate.high - r.estimate.low) / hw
        if hw > 0 and math.isfinite(hw) and not r.estimate.is_empty
        else None
    )
    return ABJudgeCorrected(
        labels=labels,
        n=len(keys),
        n_unlabelled=len(rest),
        n_labels_unmatched=len(human) - len(keys),
        judge_only=r.naive_judge,
        human_only=r.human_only,
        corrected=r.estimate,
        lam=r.lam,
        width_ratio=ratio,
        caveats=caveats,
    )

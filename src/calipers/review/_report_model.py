"""What ``review_report`` returns: plain frozen dataclasses, JSON-ready through ``to_dict()``.

Every number is an :class:`~calipers.types.Estimate` (value, interval, n, method) or a count;
NaN is written as ``null``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from calipers.types import Estimate

__all__ = [
    "FinalLabelRow",
    "ModelRating",
    "PairRate",
    "PairwiseReport",
    "PoolAgreement",
    "QuestionReport",
    "Rate",
    "RaterQC",
    "ReviewReport",
    "jsonable",
]


def jsonable(value: Any) -> Any:
    """Dataclasses, Estimates, tuples and NaN turned into JSON values (NaN as ``None``)."""
    if isinstance(value, Estimate):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True, slots=True)
class Rate:
    """One rate of a question (``"pass"``, ``"choice: formal"``, ``"mean"``, a tag, ...) with
    its interval; items are the unit (the mean of an item's raters, then over items)."""

    label: str
    estimate: Estimate


@dataclass(frozen=True, slots=True)
class PoolAgreement:
    """Agreement within one pool (``pools == (p,)``: alpha among its raters), or between two
    (``(p, q)``: alpha between the two pools' per-item consensus)."""

    pools: tuple[str, ...]
    alpha: Estimate


@dataclass(frozen=True, slots=True)
class QuestionReport:
    """Agreement and rates of one question, over counted judgments of raters not excluded.

    ``cohen_kappa``: only when exactly two raters judged the items (on the items both
    judged); ``fleiss_kappa``: only when every item has the same number (>= 2) of judgments.
    """

    id: str
    type: str
    level: str
    n_items: int
    n_judgments: int
    alpha: Estimate
    cohen_kappa: Estimate | None
    fleiss_kappa: Estimate | None
    rates: tuple[Rate, ...]
    pools: tuple[PoolAgreement, ...]
    provenance: dict[str, int]


@dataclass(frozen=True, slots=True)
class RaterQC:
    """Quality figures of one rater; ``flagged``/``flag_reasons`` from ``stats.rater_flag``,
    ``competence`` the Dawid-Skene accuracy on the campaign's first labelled question."""

    name: str
    pool: str
    role: str
    excluded: bool
    excluded_reason: str | None
    answered: int
    skipped: int | None
    median_seconds: float | None
    too_fast: int | None
    gold_accuracy: Estimate
    attention: Estimate
    self_consistency: Estimate
    left_share: Estimate | None
    agreement: Estimate
    competence: float | None
    flagged: bool
    flag_reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ModelRating:
    """A model's Bradley-Terry (Davidson) rating with its bootstrap and rank intervals."""

    model: str
    elo: Estimate
    rank: int
    rank_low: int
    rank_high: int
    wins: int
    losses: int
    ties: int
    unbounded: bool


@dataclass(frozen=True, slots=True)
class PairRate:
    """``model_a`` against ``model_b``: shares of judgments won by a / tied, per item then over
    items (items are the unit)."""

    model_a: str
    model_b: str
    n_items: int
    win_a: Estimate
    tie: Estimate


@dataclass(frozen=True, slots=True)
class PairwiseReport:
    """Pairwise results of the preference question: pair rates, ratings and position bias
    (share of "left" picks among decisive raw answers, Wilson)."""

    question: str
    pairs: tuple[PairRate, ...]
    ratings: tuple[ModelRating, ...]
    rating_method: str
    rating_note: str | None
    left_share: Estimate


@dataclass(frozen=True, slots=True)
class FinalLabelRow:
    """One final label: the value of question ``question`` for ``item_key`` and where it came
    from (unanimous / majority / weighted / adjudicated by ``by`` / unresolved)."""

    item_key: str
    question: str
    value: Any
    provenance: str
    by: str | None
    n_judgments: int
    votes: dict[str, int]


@dataclass(frozen=True, slots=True)
class ReviewReport:
    """The campaign's results: ``review_report(store, campaign)``."""

    campaign: str
    kind: str
    method: str
    seed: int
    n_items: int
    n_control_items: int
    n_judgments: int
    n_skipped: int | None
    excluded_raters: tuple[str, ...]
    questions: tuple[QuestionReport, ...]
    over_refusal: Estimate | None
    pairwise: PairwiseReport | None
    raters: tuple[RaterQC, ...]
    final_labels: tuple[FinalLabelRow, ...]
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = jsonable(self)
        return out

"""Per-rater quality figures for human review, each with an interval; items are the unit.

Gold accuracy and self-consistency are Wilson intervals over the rater's items; the share
of "left" picks in pairwise items is :func:`position_bias` (single-order design: the
left/right order is randomised per rater and item). :func:`rater_flag` is the rusher /
random-clicker rule, :func:`first_flag` the item count at which it first fires.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats._agreement import position_bias
from calipers.stats._proportion import check_confidence, wilson
from calipers.types import Estimate

__all__ = [
    "RaterFlag",
    "first_flag",
    "gold_accuracy",
    "left_share",
    "rater_flag",
    "self_consistency",
]


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))


def _matches(a: Sequence[Hashable], b: Sequence[Hashable], what: str) -> tuple[int, int]:
    """How many pairs agree, out of the pairs where neither label is missing."""
    if len(a) != len(b):
        raise ValueError(f"{what}: got {len(a)} and {len(b)} labels; pair them item by item")
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if not (_missing(x) or _missing(y))]
    return sum(x == y for x, y in pairs), len(pairs)


def gold_accuracy(
    labels: Sequence[Hashable], gold: Sequence[Hashable], *, confidence: float = 0.95
) -> Estimate:
    """Share of gold items the rater answered as the gold answer (``labels[i]`` vs
    ``gold[i]``), with a Wilson interval; items with a missing label (None/NaN, e.g. a
    skip) are left out. One entry per gold item: repeats of an item should be reduced to
    one (e.g. the first answer) so that items stay the unit."""
    k, n = _matches(labels, gold, "gold_accuracy")
    return wilson(k, n, confidence)


def self_consistency(
    first: Sequence[Hashable], repeat: Sequence[Hashable], *, confidence: float = 0.95
) -> Estimate:
    """Share of planned repeats where the rater gave the same label both times
    (``first[i]`` vs ``repeat[i]`` for item i), with a Wilson interval; pairs with a
    missing answer are left out."""
    k, n = _matches(first, repeat, "self_consistency")
    return wilson(k, n, confidence)


def left_share(left_picked: npt.ArrayLike, *, confidence: float = 0.95) -> Estimate:
    """Share of the rater's pairwise picks that went to the answer shown on the left.

    ``left_picked[i]`` is 1 (left chosen), 0 (right), 0.5 (tie) or NaN (skipped); ties are
    left out. With left/right randomised per item, a rater with no position bias picks left
    half the time: an interval excluding 0.5 is evidence of a preference for one side.
    This is :func:`position_bias`'s single-order ``first_share`` (Wilson interval); the
    exact binomial p-value is on ``position_bias(left_picked).p_value``.
    """
    return position_bias(left_picked, confidence=confidence).first_share


@dataclass(frozen=True, slots=True)
class RaterFlag:
    """The rusher / random-clicker verdict on one rater after ``n`` items.

    ``too_fast``: the median time per item is under the minimum; ``agreement``: share of
    the rater's answers agreeing with the reference (gold, or the consensus of the other
    raters), Wilson interval; ``floor``: the agreement a diligent rater should reach.
    ``reasons``: ``"fast-and-not-clearly-good"`` and/or ``"clearly-below-floor"``.
    """

    flagged: bool
    reasons: tuple[str, ...]
    n: int
    median_seconds: float
    too_fast: bool
    agreement: Estimate
    floor: float


def _floor(n_choices: int, floor: float | None) -> float:
    if n_choices < 2:
        raise ValueError(f"n_choices must be at least 2, got {n_choices!r}")
    f = (1.0 + 1.0 / n_choices) / 2 if floor is None else float(floor)
    if not 1.0 / n_choices < f < 1.0:
        raise ValueError(f"floor must lie between chance (1/{n_choices}) and 1, got {f!r}")
    return f


def rater_flag(
    seconds: npt.ArrayLike,
    agrees: npt.ArrayLike,
    *,
    n_choices: int,
    min_seconds: float = 5.0,
    floor: float | None = None,
    min_items: int = 5,
    confidence: float = 0.95,
) -> RaterFlag:
    """Is this rater rushing or clicking at random? One entry per item the rater answered.

    ``seconds[i]``: time spent on the item; ``agrees[i]``: 1 when the answer matches the
    reference (the gold answer, or the consensus of the other raters), 0 when not, NaN
    when there is no reference. A random clicker agrees with chance ``1 / n_choices``
    whatever the reference says; ``floor`` (default halfway between chance and 1) is the
    agreement a diligent rater should reach. The rule (checked once ``min_items`` items
    have a time):

    * fast and not clearly good: median seconds per item below ``min_seconds`` and the
      agreement's point estimate below ``floor`` (speed lowers the bar of evidence: a fast
      rater who agrees well is not flagged); or
    * clearly below the floor at any speed: the upper end of the agreement's Wilson
      interval below ``floor``.

    Either reason flags the rater. ``min_seconds`` belongs to the task (reading two long
    answers takes longer than a yes/no); the default of 5 s is only a placeholder.
    """
    c, f = check_confidence(confidence), _floor(n_choices, floor)
    t = np.asarray(seconds, dtype=np.float64).reshape(-1)
    a = np.asarray(agrees, dtype=np.float64).reshape(-1)
    if t.size != a.size:
        raise ValueError(f"got {t.size} times and {a.size} agreements; one of each per item")
    if not np.isin(a[~np.isnan(a)], (0.0, 1.0)).all():
        raise ValueError("agrees must hold 1 (agrees with the reference), 0 or NaN")
    timed, refs = t[~np.isnan(t)], a[~np.isnan(a)]
    agreement = wilson(int(refs.sum()), int(refs.size), c)
    median = float(np.median(timed)) if timed.size else math.nan
    too_fast = timed.size >= min_items and median < min_seconds
    reasons = []
    if too_fast and not agreement.value >= f:  # NaN (no reference yet) counts as not good
        reasons.append("fast-and-not-clearly-good")
    if refs.size >= min_items and agreement.high < f:
        reasons.append("clearly-below-floor")
    return RaterFlag(bool(reasons), tuple(reasons), int(t.size), median, too_fast, agreement, f)


def first_flag(
    seconds: npt.ArrayLike,
    agrees: npt.ArrayLike,
    *,
    n_choices: int,
    min_seconds: float = 5.0,
    floor: float | None = None,
    min_items: int = 5,
    confidence: float = 0.95,
) -> int | None:
    """The number of items after which :func:`rater_flag` first flags the rater, checking
    after every item in the order given (as a live campaign would); None if it never does.
    Checking after every item is a sequence of looks: the false-flag rate of a diligent
    rater grows with the number of items watched (see the tests for measured rates)."""
    t = np.asarray(seconds, dtype=np.float64).reshape(-1)
    a = np.asarray(agrees, dtype=np.float64).reshape(-1)
    for n in range(1, t.size + 1):
        verdict = rater_flag(
            t[:n],
            a[:n],
            n_choices=n_choices,
            min_seconds=min_seconds,
            floor=floor,
            min_items=min_items,
            confidence=confidence,
        )
        if verdict.flagged:
            return n
    return None

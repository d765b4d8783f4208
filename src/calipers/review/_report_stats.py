"""Per-question agreement and rates for the review report, from ``calipers.stats``.

A *vote* is one counted judgment's answer to one question, as ``(item_key, rater, label)``;
the report passes only votes of raters not excluded, on items that are not control items.
Items are the unit of every rate: an item's raters are averaged first, then the interval is
taken over items (``stats.clustered_mean`` with one item per cluster: a t interval).

Fleiss' kappa is the one statistic not in ``calipers.stats``: the point value is statsmodels'
``fleiss_kappa``, the interval a percentile bootstrap over items computed here.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from calipers.review._questions import Choice, Likert, PassFail, Preference, Tags
from calipers.review._report_model import PoolAgreement, Rate
from calipers.stats import clustered_mean, cohens_kappa, krippendorff_alpha, wilson
from calipers.types import Estimate

__all__ = [
    "Labelled",
    "Vote",
    "alpha_level",
    "fleiss",
    "item_rate",
    "kappa_two",
    "pool_agreement",
    "question_alpha",
    "question_rates",
]

Vote = tuple[str, str, Hashable]  # item_key, rater, label
Labelled = PassFail | Likert | Choice | Preference | Tags
N_RESAMPLES = 1000


def alpha_level(q: Labelled) -> str:
    """Krippendorff's level: ordinal for Likert, nominal otherwise."""
    return "ordinal" if isinstance(q, Likert) else "nominal"


def categories(q: Labelled) -> tuple[Hashable, ...]:
    if isinstance(q, PassFail):
        return (False, True)
    if isinstance(q, Likert):
        return (1, 2, 3, 4, 5)
    if isinstance(q, Preference):
        return ("a", "b", "tie") if q.ties else ("a", "b")
    if isinstance(q, Choice):
        return q.options
    return (False, True)  # one tag: applied or not


def _table(votes: Sequence[Vote]) -> list[list[Hashable | None]]:
    """Coders x units (raters x items) with None where a rater did not judge an item."""
    items = list(dict.fromkeys(v[0] for v in votes))
    raters = list(dict.fromkeys(v[1] for v in votes))
    col = {k: i for i, k in enumerate(items)}
    row = {r: i for i, r in enumerate(raters)}
    table: list[list[Hashable | None]] = [[None] * len(items) for _ in raters]
    for item, rater, label in votes:
        table[row[rater]][col[item]] = label
    return table


def question_alpha(
    votes: Sequence[Vote], level: str, cats: Sequence[Hashable], rng: np.random.Generator
) -> Estimate:
    """Krippendorff's alpha of the votes, bootstrap over items."""
    if not votes:
        return Estimate.empty("bootstrap-units-percentile")
    return krippendorff_alpha(
        _table(votes),
        level=level,  # type: ignore[arg-type]
        categories=list(cats) if level == "ordinal" else None,
        rng=rng,
        n_resamples=N_RESAMPLES,
    )


def kappa_two(votes: Sequence[Vote], q: Labelled) -> Estimate | None:
    """Cohen's kappa when exactly two raters gave the votes (on the items both judged);
    linear weights for Likert."""
    by: dict[str, dict[str, Hashable]] = defaultdict(dict)
    for item, rater, label in votes:
        by[rater][item] = label
    if len(by) != 2:
        return None
    first, second = by.values()
    common = [k for k in first if k in second]
    if not common:
        return None
    return cohens_kappa(
        [first[k] for k in common],
        [second[k] for k in common],
        weights="linear" if isinstance(q, Likert) else "none",
        categories=list(categories(q)),
    )


def _fleiss_value(table: np.ndarray[Any, np.dtype[np.float64]]) -> float:
    from statsmodels.stats.inter_rater import fleiss_kappa

    with np.errstate(divide="ignore", invalid="ignore"):
        return float(fleiss_kappa(table, method="fleiss"))


def fleiss(
    votes: Sequence[Vote], cats: Sequence[Hashable], rng: np.random.Generator
) -> Estimate | None:
    """Fleiss' kappa when every item has the same number (>= 2) of votes; percentile
    bootstrap over items. None when it does not apply."""
    per_item: dict[str, Counter[Hashable]] = defaultdict(Counter)
    for item, _rater, label in votes:
        per_item[item][label] += 1
    sizes = {sum(c.values()) for c in per_item.values()}
    if len(sizes) != 1 or next(iter(sizes)) < 2:
        return None
    table = np.array([[c[k] for k in cats] for c in per_item.values()], dtype=np.float64)
    method = "fleiss (statsmodels), bootstrap-items-percentile"
    value = _fleiss_value(table)
    n = table.shape[0]
    if math.isnan(value):
        return Estimate(math.nan, math.nan, math.nan, n, method)
    draws = np.array([_fleiss_value(table[rng.integers(0, n, n)]) for _ in range(N_RESAMPLES // 4)])
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return Estimate(value, -math.inf, math.inf, n, method)
    low, high = np.quantile(draws, [0.025, 0.975])
    return Estimate(value, min(float(low), value), max(float(high), value), n, method)


def item_rate(per_item: dict[str, list[float]], *, share: bool = True) -> Estimate:
    """Mean over items of each item's mean, with a t interval over items. A share (values 0
    or 1) whose items all agree within (every item mean 0 or 1: one rater, or unanimous
    raters) is a proportion of items: a Wilson interval, which does not collapse to a point
    at 0% or 100% as a t interval would. A share's t interval is kept within [0, 1]."""
    keys = [k for k, v in per_item.items() if v]
    means = [float(np.mean(per_item[k])) for k in keys]
    if share and keys and all(m in (0.0, 1.0) for m in means):
        return wilson(int(sum(means)), len(means))
    est = clustered_mean(means, keys)
    if share and est.n:
        est = Estimate(
            est.value, max(est.low, 0.0), min(est.high, 1.0), est.n, est.method, est.confidence
        )
    return est


def _shares(votes: Sequence[Vote], target: Hashable) -> Estimate:
    per_item: dict[str, list[float]] = defaultdict(list)
    for item, _rater, label in votes:
        per_item[item].append(1.0 if label == target else 0.0)
    return item_rate(per_item)


def question_rates(votes: Sequence[Vote], q: Labelled) -> tuple[Rate, ...]:
    """Pass rate, share of each option / outcome, or the mean Likert rating."""
    if isinstance(q, PassFail):
        return (Rate("pass", _shares(votes, True)),)
    if isinstance(q, Likert):
        per_item: dict[str, list[float]] = defaultdict(list)
        for item, _rater, label in votes:
            per_item[item].append(float(label))  # type: ignore[arg-type]
        return (Rate("mean", item_rate(per_item, share=False)),)
    return tuple(Rate(str(c), _shares(votes, c)) for c in categories(q))


def _consensus(votes: Sequence[Vote], numeric: bool) -> dict[str, Hashable]:
    """Each item's consensus: the mean (numeric) or the unique most common label."""
    per_item: dict[str, list[Hashable]] = defaultdict(list)
    for item, _rater, label in votes:
        per_item[item].append(label)
    out: dict[str, Hashable] = {}
    for item, labels in per_item.items():
        if numeric:
            out[item] = float(np.mean([float(x) for x in labels]))  # type: ignore[arg-type]
            continue
        top = Counter(labels).most_common()
        if len(top) == 1 or top[0][1] > top[1][1]:
            out[item] = top[0][0]
    return out


def pool_agreement(
    votes: Sequence[Vote],
    pool_of: dict[str, str],
    q: Labelled,
    rng: np.random.Generator,
) -> tuple[PoolAgreement, ...]:
    """Alpha within each pool with two or more raters, and between each two pools: alpha
    between the pools' per-item consensus (the mean rating for Likert, interval level;
    the unique most common label otherwise, items with a tied vote left out)."""
    level, cats = alpha_level(q), categories(q)
    pools = sorted({pool_of[r] for _i, r, _l in votes})
    out: list[PoolAgreement] = []
    for p in pools:
        mine = [v for v in votes if pool_of[v[1]] == p]
        if len({v[1] for v in mine}) >= 2:
            out.append(PoolAgreement((p,), question_alpha(mine, level, cats, rng)))
    numeric = isinstance(q, Likert)
    for i, p in enumerate(pools):
        for other in pools[i + 1 :]:
            both: list[Vote] = []
            for name in (p, other):
                cons = _consensus([v for v in votes if pool_of[v[1]] == name], numeric)
                both.extend((item, name, label) for item, label in cons.items())
            lvl = "interval" if numeric else level
            out.append(PoolAgreement((p, other), question_alpha(both, lvl, cats, rng)))
    return tuple(out)

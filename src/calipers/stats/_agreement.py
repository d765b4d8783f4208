"""Does the judge agree with people? Judge-human agreement, and the judge's known biases.

Cohen's kappa for a judge against one human labeller (nominal, or weighted for ordinal
scales), Krippendorff's alpha for several coders with missing labels, and two bias checks
for pairwise judges: position bias (does the answer shown first win?) and length bias (does
the longer answer win?). See ``docs/statistics-agreement-sequential-drift.md``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from calipers.stats._proportion import check_confidence, wilson
from calipers.types import Estimate

__all__ = [
    "CorrelationTest",
    "PositionBias",
    "cohens_kappa",
    "krippendorff_alpha",
    "length_bias",
    "position_bias",
]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.intp]
Labels = Sequence[object] | npt.ArrayLike
KappaWeights = Literal["none", "linear", "quadratic"]
Level = Literal["nominal", "ordinal", "interval", "ratio"]
CHUNK = 1 << 20  # bootstrap cells held at once
_NUMBER = int | float | np.integer | np.floating


def _missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))


def _flat(labels: Labels) -> list[object]:
    return list(np.asarray(labels, dtype=object).reshape(-1))


def _scale(
    labels: list[object], categories: Sequence[Hashable] | None, ordered: bool, what: str
) -> list[Hashable]:
    """The ordered categories: ``categories`` as given, else the labels seen, sorted.

    ``ordered``: the order matters (weights, ordinal), so non-numeric labels need
    ``categories``; otherwise unorderable labels keep their order of first appearance.
    """
    if categories is not None:
        return list(categories)
    seen: list[Hashable] = list(dict.fromkeys(v for v in labels if not _missing(v)))
    if ordered and not all(isinstance(v, _NUMBER) for v in seen):
        raise ValueError(f"{what} needs the scale order: pass categories=[...] in order")
    try:
        return sorted(seen)  # type: ignore[type-var]
    except TypeError:
        return seen


def _codes(labels: list[object], scale: list[Hashable]) -> Ints:
    """Integer code of each label in ``scale``; -1 for a missing label (None or NaN)."""
    index = {c: i for i, c in enumerate(scale)}
    out = np.empty(len(labels), dtype=np.intp)
    for i, v in enumerate(labels):
        code = -1 if _missing(v) else index.get(v, -2)
        if code == -2:
            raise ValueError(f"label {v!r} at position {i} is not one of the categories {scale}")
        out[i] = code
    return out


def _kappa_weights(k: int, weights: KappaWeights) -> Floats:
    """Agreement weights: 1 on the diagonal, less the further apart two categories are."""
    i = np.arange(k, dtype=np.float64)
    gap = np.abs(i[:, None] - i[None, :]) / max(k - 1, 1)
    if weights == "none":
        return np.eye(k)
    if weights == "linear":
        return 1.0 - gap
    if weights == "quadratic":
        return 1.0 - gap**2
    raise ValueError(f"weights must be 'none', 'linear' or 'quadratic', got {weights!r}")


def _kappa_of(p: Floats, w: Floats) -> Floats:
    """Kappa of cell proportions ``p`` (shape ``(..., K, K)``); NaN where chance agreement
    is 1 (both raters used one category throughout: agreement beyond chance is undefined)."""
    row, col = p.sum(axis=-1), p.sum(axis=-2)
    po = (p * w).sum(axis=(-2, -1))
    pe = np.einsum("...i,ij,...j->...", row, w, col)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: Floats = np.where(pe < 1 - 1e-12, (po - pe) / (1 - pe), np.nan)
    return out


def _kappa_se(p: Floats, w: Floats, kappa: float, n: int) -> float:
    """Large-sample SE of (weighted) kappa, Fleiss, Cohen & Everitt (1969), Psychological
    Bulletin 72:323-327, with agreement weights ``w``::

        var = [sum_ij p_ij (w_ij - (wbar_i. + wbar_.j)(1 - k))^2 - (k - pe (1 - k))^2]
              / (n (1 - pe)^2),   wbar_i. = sum_j p_.j w_ij,  wbar_.j = sum_i p_i. w_ij
    """
    row, col = p.sum(axis=1), p.sum(axis=0)
    pe = float(row @ w @ col)
    wr, wc = w @ col, row @ w
    term = float(np.sum(p * (w - (wr[:, None] + wc[None, :]) * (1 - kappa)) ** 2))
    var = (term - (kappa - pe * (1 - kappa)) ** 2) / (n * (1 - pe) ** 2)
    return math.sqrt(max(var, 0.0))


def _quantiles(draws: Floats, c: float) -> tuple[float, float]:
    """Percentile interval of the defined draws; ``(-inf, inf)`` when none is defined."""
    if np.isnan(draws).all():
        return -math.inf, math.inf
    low, high = np.nanquantile(draws, [(1 - c) / 2, (1 + c) / 2])
    return float(low), float(high)


def cohens_kappa(
    a: Labels,
    b: Labels,
    *,
    weights: KappaWeights = "none",
    categories: Sequence[Hashable] | None = None,
    interval: Literal["asymptotic", "bootstrap"] = "asymptotic",
    rng: np.random.Generator | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Estimate:
    """Cohen's kappa between two raters who labelled the same items (``a[i]``, ``b[i]``).

    ``kappa = (p_o - p_e) / (1 - p_e)``: observed agreement beyond what the two raters'
    label frequencies give by chance (Cohen 1960). ``weights="linear"`` / ``"quadratic"``
    gives weighted kappa for ordinal scales (Cohen 1968): agreement weight
    ``1 - |i - j| / (K - 1)`` or ``1 - (i - j)^2 / (K - 1)^2`` between the i-th and j-th
    category of ``categories`` (required for weights unless the labels are numbers, which
    are then ordered by value; an unused category still counts in K). Items where either
    label is missing (None or NaN) are dropped.

    Interval: ``"asymptotic"`` is ``kappa +/- z SE`` with the large-sample SE of Fleiss, Cohen
    & Everitt (1969) (method ``fleiss-cohen-everitt``); ``"bootstrap"`` resamples items
    (drawn as multinomial counts of the K x K table, the same distribution) with ``rng`` and
    takes the percentile interval (``bootstrap-percentile``; resamples where kappa is
    undefined are left out). Bounds are clipped to [-1, 1]. Kappa is NaN when chance
    agreement is 1 (both raters used a single category); no items gives ``Estimate.empty``.
    """
    c = check_confidence(confidence)
    la, lb = _flat(a), _flat(b)
    if len(la) != len(lb):
        raise ValueError(f"a has {len(la)} labels and b has {len(lb)}; pair them item by item")
    if interval not in ("asymptotic", "bootstrap"):
        raise ValueError(f"interval must be 'asymptotic' or 'bootstrap', got {interval!r}")
    method = "fleiss-cohen-everitt" if interval == "asymptotic" else "bootstrap-percentile"
    if interval == "bootstrap" and rng is None:
        raise ValueError("interval='bootstrap' needs rng=np.random.default_rng(seed)")
    scale = _scale(la + lb, categories, weights != "none", "weighted kappa")
    k, w = len(scale), _kappa_weights(len(scale), weights)
    ca, cb = _codes(la, scale), _codes(lb, scale)
    keep = (ca >= 0) & (cb >= 0)
    n = int(keep.sum())
    if n == 0:
        return Estimate.empty(method, c)
    p = np.bincount(ca[keep] * k + cb[keep], minlength=k * k).reshape(k, k) / n
    kappa = float(_kappa_of(p, w))
    if math.isnan(kappa):
        return Estimate(math.nan, math.nan, math.nan, n, method, c)
    if rng is None or interval == "asymptotic":
        half = float(stats.norm.ppf(0.5 + c / 2)) * _kappa_se(p, w, kappa, n)
        low, high = kappa - half, kappa + half
    else:
        draws = rng.multinomial(n, p.reshape(-1), size=n_resamples).reshape(-1, k, k) / n
        low, high = _quantiles(_kappa_of(draws, w), c)
    return Estimate(kappa, max(-1.0, min(low, kappa)), min(1.0, max(high, kappa)), n, method, c)


@dataclass(frozen=True, slots=True)
class _Units:
    """Pairable units of reliability data: value counts per unit and the distinct values."""

    counts: Floats  # (units, K): how many coders gave each value to the unit
    values: Floats  # (K,) numeric value of each category (its index for nominal/ordinal)


def _units(
    data: Sequence[Sequence[object]] | npt.ArrayLike,
    level: Level,
    categories: Sequence[Hashable] | None,
) -> _Units:
    table: list[Any] = list(data)  # type: ignore[arg-type]
    if any(np.ndim(r) != 1 for r in table) or len({len(r) for r in table}) > 1:
        raise ValueError("reliability data must be a coders x units table of equal-length rows")
    rows = [_flat(r) for r in table]
    flat = [v for r in rows for v in r]
    numeric = level in ("interval", "ratio")
    if numeric:
        try:
            flat = [v if _missing(v) else float(v) for v in flat]  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{level} alpha needs numeric values: {exc}") from None
        if level == "ratio" and any(not _missing(v) and v < 0 for v in flat):  # type: ignore[operator]
            raise ValueError("ratio alpha needs values >= 0 (a ratio scale has a true zero)")
    scale = _scale(flat, None if numeric else categories, level == "ordinal", "ordinal alpha")
    k = len(scale)
    codes = _codes(flat, scale).reshape(len(rows), -1)
    counts = np.zeros((codes.shape[1], k))
    coder, unit = np.nonzero(codes >= 0)
    np.add.at(counts, (unit, codes[coder, unit]), 1.0)
    counts = counts[counts.sum(axis=1) >= 2]  # a unit coded once has nothing to agree with
    values = np.array(scale, dtype=np.float64) if numeric else np.arange(k, dtype=np.float64)
    return _Units(counts, values)


def _alpha_weighted(u: _Units, level: Level, w: Floats) -> Floats:
    """Alpha when unit i carries weight ``w[:, i]`` (rows: resamples; ones: the data).

    ``alpha = 1 - (n - 1) sum_u d_u / sum_ck n_c n_k delta_ck^2`` where ``d_u`` is the
    disagreement within unit u, ``sum_ck o_uck delta_ck^2`` with the unit's coincidences
    ``o_uck = (n_uc n_uk - [c = k] n_uc) / (m_u - 1)``.
    """
    m = u.counts.sum(axis=1)
    nc = w @ u.counts  # (B, K) pairable values by category
    n = nc.sum(axis=1)
    if level in ("interval", "ordinal"):
        # delta_ck = r_k - r_c with r the values or, for ordinal, the mid-ranks
        # r_c = sum_{g < c} n_g + n_c / 2: Krippendorff's ordinal metric, rewritten.
        r = (
            (np.cumsum(nc, axis=1) - nc / 2)
            if level == "ordinal"
            else np.broadcast_to(u.values, nc.shape)
        )
        s, q = u.counts @ r.T, u.counts @ (r.T**2)  # (units, B)
        within = 2 * q - 2 * (s**2 - q) / (m[:, None] - 1)
        observed = np.einsum("bu,ub->b", w, within)
        expected = 2 * n * (nc * r**2).sum(axis=1) - 2 * (nc * r).sum(axis=1) ** 2
    else:
        v = u.values
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = (
                1.0 - np.eye(v.size)
                if level == "nominal"
                else np.nan_to_num(((v[:, None] - v) / (v[:, None] + v)) ** 2)
            )
        observed = w @ (((u.counts @ delta) * u.counts).sum(axis=1) / (m - 1))
        expected = ((nc @ delta) * nc).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: Floats = np.where(expected > 0, 1.0 - (n - 1) * observed / expected, np.nan)
    return out


def krippendorff_alpha(
    data: Sequence[Sequence[object]] | npt.ArrayLike,
    *,
    level: Level = "nominal",
    categories: Sequence[Hashable] | None = None,
    rng: np.random.Generator,
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> Estimate:
    """Krippendorff's alpha for a coders x units table (``data[coder][unit]``) with gaps.

    Missing labels are None or NaN; any number of coders; the units coded by at least two
    are used (``n`` counts them). ``level`` sets the difference function: nominal
    (different or not), ordinal (ranks; ``categories`` gives the order of non-numeric
    labels), interval (squared difference), ratio (``((c - k) / (c + k))^2``, values >= 0).
    Computed from the coincidence matrix as in Krippendorff (2011), "Computing
    Krippendorff's Alpha-Reliability".

    Interval: percentile bootstrap over units (``bootstrap-units-percentile``): units are
    resampled with replacement with all their labels and alpha is recomputed (ordinal ranks
    included). This is not Krippendorff's own bootstrap, which resamples pairable values.
    Alpha is NaN when all values are identical (no variation to agree on); no pairable unit
    gives ``Estimate.empty``.
    """
    c = check_confidence(confidence)
    if level not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level must be nominal, ordinal, interval or ratio, got {level!r}")
    method = "bootstrap-units-percentile"
    u = _units(data, level, categories)
    n = u.counts.shape[0]
    if n == 0:
        return Estimate.empty(method, c)
    alpha = float(_alpha_weighted(u, level, np.ones((1, n)))[0])
    if math.isnan(alpha):
        return Estimate(math.nan, math.nan, math.nan, n, method, c)
    rows = max(1, CHUNK // (n * max(1, u.values.size)))
    draws = np.concatenate(
        [
            _alpha_weighted(u, level, rng.multinomial(n, np.full(n, 1.0 / n), size=m).astype(float))
            for m in [min(rows, n_resamples - s) for s in range(0, n_resamples, rows)]
        ]
    )
    low, high = _quantiles(draws, c)
    return Estimate(alpha, min(low, alpha), min(1.0, max(high, alpha)), n, method, c)


@dataclass(frozen=True, slots=True)
class PositionBias:
    """Does a pairwise judge prefer whichever answer it sees first?

    Swapped design (each pair judged in both orders): ``consistency`` is the share of pairs
    whose winner survives the swap; among the others (the verdict followed the position),
    ``first_share`` is the share where the first position won both times. With no position
    bias it is 0.5; ``p_value`` is the exact two-sided binomial test of that. Single-order
    design (orders randomised): ``first_share`` is the share of judgments won by the first
    position, also 0.5 with no bias; ``consistency`` is empty. Ties are left out
    (``n_ties``).
    """

    n_pairs: int
    n_ties: int
    consistency: Estimate
    first_share: Estimate
    p_value: float


def _preferences(x: npt.ArrayLike, name: str) -> Floats:
    v = np.asarray(x, dtype=np.float64).reshape(-1)
    if not np.isin(v[~np.isnan(v)], (0.0, 0.5, 1.0)).all():
        raise ValueError(f"{name} must hold 1 (first preferred), 0 (second), 0.5 (tie) or NaN")
    return v


def _binom_p(k: int, n: int) -> float:
    return float(stats.binomtest(k, n, 0.5).pvalue) if n else math.nan


def position_bias(
    first_preferred: npt.ArrayLike,
    first_preferred_swapped: npt.ArrayLike | None = None,
    *,
    confidence: float = 0.95,
) -> PositionBias:
    """Position bias of a pairwise judge, with Wilson intervals and a binomial test.

    ``first_preferred[i]`` is 1 when the judge preferred the answer shown first for pair i,
    0 the second, 0.5 a tie, NaN not judged; ``first_preferred_swapped[i]`` the same with
    the two answers swapped. A pair is consistent when the same answer wins both times
    (``1, 0`` or ``0, 1``); ``1, 1`` is a first-position win, ``0, 0`` a second-position win.
    Without the swapped judgments, the orders must have been randomised.
    """
    c = check_confidence(confidence)
    ab = _preferences(first_preferred, "first_preferred")
    if first_preferred_swapped is None:
        judged = ab[~np.isnan(ab)]
        decided = judged[judged != 0.5]
        k, n = int(decided.sum()), int(decided.size)
        return PositionBias(
            n, int(judged.size - n), Estimate.empty("wilson", c), wilson(k, n, c), _binom_p(k, n)
        )
    ba = _preferences(first_preferred_swapped, "first_preferred_swapped")
    if ab.size != ba.size:
        raise ValueError(f"got {ab.size} judgments and {ba.size} swapped ones; pair them")
    both = ~(np.isnan(ab) | np.isnan(ba))
    tie = both & ((ab == 0.5) | (ba == 0.5))
    ab, ba = ab[both & ~tie], ba[both & ~tie]
    n, consistent = int(ab.size), int(np.sum(ab != ba))
    first, flipped = int(np.sum((ab == 1) & (ba == 1))), n - consistent
    return PositionBias(
        n,
        int(tie.sum()),
        wilson(consistent, n, c),
        wilson(first, flipped, c),
        _binom_p(first, flipped),
    )


@dataclass(frozen=True, slots=True)
class CorrelationTest:
    """A rank correlation with its interval and the p-value of "no correlation"."""

    estimate: Estimate
    p_value: float


def _rank_corr(x: Floats, y: Floats, method: str) -> tuple[float, float]:
    r = stats.spearmanr(x, y) if method == "spearman" else stats.kendalltau(x, y)
    return float(r.statistic), float(r.pvalue)


def _spearman_rows(x: Floats, y: Floats) -> Floats:
    """Spearman correlation of each row pair (midranks), vectorised over rows."""
    rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: Floats = (rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    return out


def length_bias(
    length_a: npt.ArrayLike,
    length_b: npt.ArrayLike,
    b_preferred: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    human_b_preferred: npt.ArrayLike | None = None,
    method: Literal["spearman", "kendall"] = "spearman",
    confidence: float = 0.95,
    n_resamples: int = 2000,
) -> CorrelationTest:
    """Rank correlation between ``length_b - length_a`` and the judge's preference for B.

    ``b_preferred`` is 1 (B preferred), 0 (A), 0.5 (tie) or a probability. A positive
    correlation means longer answers win more often. Longer answers may simply be better;
    with ``human_b_preferred`` the judge's preference minus the human one is used instead,
    so only the judge's excess preference for length counts. Pairs with a NaN are dropped.
    The p-value is scipy's (``spearmanr`` t approximation, ``kendalltau`` tau-b with ties);
    the interval is a percentile bootstrap over pairs with ``rng``
    (``<method>-bootstrap-percentile``), which does not lean on continuous data
    (preferences are mostly ties). Fewer than 3 pairs, or no variation, gives NaN.
    """
    c = check_confidence(confidence)
    if method not in ("spearman", "kendall"):
        raise ValueError(f"method must be 'spearman' or 'kendall', got {method!r}")
    given = (length_a, length_b, b_preferred) + (
        () if human_b_preferred is None else (human_b_preferred,)
    )
    cols = [np.asarray(v, dtype=np.float64).reshape(-1) for v in given]
    if len({v.size for v in cols}) > 1:
        raise ValueError(f"inputs must have one value per pair; got sizes {[v.size for v in cols]}")
    keep = ~np.any([np.isnan(v) for v in cols], axis=0)
    x = cols[1][keep] - cols[0][keep]
    y = cols[2][keep] - (cols[3][keep] if len(cols) == 4 else 0.0)
    n, name = int(x.size), f"{method}-bootstrap-percentile"
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return CorrelationTest(Estimate(math.nan, math.nan, math.nan, n, name, c), math.nan)
    value, p = _rank_corr(x, y, method)
    rows, draws = max(1, CHUNK // n), []
    for start in range(0, n_resamples, rows):
        idx = rng.integers(0, n, size=(min(rows, n_resamples - start), n))
        draws.append(
            _spearman_rows(x[idx], y[idx])
            if method == "spearman"
            else np.array([_rank_corr(x[i], y[i], method)[0] for i in idx])
        )
    low, high = _quantiles(np.concatenate(draws), c)
    return CorrelationTest(Estimate(value, min(low, value), max(high, value), n, name, c), p)

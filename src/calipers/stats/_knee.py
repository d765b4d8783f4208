"""The knee of a curve: a continuous two-segment ("broken stick") line, its breakpoint with a
bootstrap interval, and a test of whether the slope really changes.

The model is ``y = a + b*x + c*max(0, x - k)``: slope ``b`` before the knee ``k``, ``b + c``
after it. For a fixed ``k`` it is ordinary least squares; ``k`` is found by profiling the
residual sum of squares over a grid strictly inside the x range (at least ``min_side`` distinct
x levels on each side) and refining the best grid cell with a bounded scalar minimiser.

Everything that is resampled is vectorised: for a fixed design, partialling ``[1, x]`` out of
the hinge column ``h_k`` gives the SSE drop ``D(k) = (h~'y~)^2 / (h~'h~)`` for every grid
point at once, and a bootstrap resample is a row weighting, so all resamples x grid points are
a few matrix products.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize_scalar

from calipers.stats._clustered import cluster_codes
from calipers.stats._proportion import check_confidence
from calipers.types import Estimate

__all__ = ["Knee", "knee"]

Floats = npt.NDArray[np.float64]
GRID_POINTS = 401  # default profile grid inside the admissible breakpoint range
CHUNK_CELLS = 1 << 21  # resamples x max(n, grid) values held at once
TEST = "sup-F wild cluster bootstrap (Hansen 1996)"


@dataclass(frozen=True)
class Knee:
    """A fitted hinge ``y = intercept + slope_before*x + (slope_after - slope_before)*(x-k)+``.

    ``knee``, ``slope_before``, ``slope_after`` and ``slope_change`` carry bootstrap
    percentile intervals (resampling clusters when given). ``p_value`` tests H0: the slope
    does not change (a straight line), valid although ``k`` was chosen from the data.
    ``verdict`` is ``"accelerates beyond X"`` when that test rejects at ``1 - confidence``, the
    change goes in the ``worse`` direction and the slope after the knee does too, its interval
    excluding 0 (the curve worsens, and faster); a rejected test otherwise says the slope
    changes but the curve does not worsen faster; else ``"no evidence of acceleration"``.
    """

    knee: Estimate
    slope_before: Estimate
    slope_after: Estimate
    slope_change: Estimate
    intercept: float
    sse: float
    p_value: float
    test: str
    verdict: str
    accelerates: bool
    n_clusters: int


def knee(
    x: npt.ArrayLike,
    y: npt.ArrayLike,
    *,
    clusters: Sequence[Hashable] | None = None,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    grid: npt.ArrayLike | None = None,
    min_side: int = 2,
    worse: Literal["down", "up"] = "down",
    x_format: str = "{:.0%}",
) -> Knee:
    """Fit a continuous two-segment line to ``(x, y)`` and test whether its slope changes.

    ``x`` is e.g. the context-fill fraction, ``y`` a per-item outcome (0/1 correct) and
    ``clusters`` the question each row belongs to; resampling is then by question. ``worse``
    says which direction of slope change is a degradation; ``x_format`` formats the knee in
    the verdict (``"{:.0%}"`` for fractions; ``"{:.0f}%"`` when x is already in percent).

    The knee interval is the bootstrap percentile interval of the profiled breakpoint (the
    bootstrap breakpoints are taken on the grid, so its resolution is the grid step). The test
    of H0: ``c = 0`` is the sup-F test of Andrews (1993) / Hansen (1996, Econometrica 64:413,
    "Inference when a nuisance parameter is not identified under the null hypothesis"): the
    statistic is ``max_k (SSE0 - SSE(k)) / SSE(k)`` over the same grid, and its null
    distribution is simulated by a wild bootstrap of the straight-line fit with Rademacher
    weights drawn per cluster (Cameron, Gelbach & Miller 2008), so the choice of ``k`` from the
    data, heteroscedastic 0/1 outcomes and within-question correlation are all accounted for.
    (R's ``segmented::davies.test`` answers the same question with Davies' 1987 upper bound,
    which assumes independent homoscedastic errors.) ``p = (1 + #{F* >= F}) / (B + 1)``.
    """
    conf = check_confidence(confidence)
    if worse not in ("down", "up"):
        raise ValueError(f"worse must be 'down' or 'up', got {worse!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    xs, ys, codes = _check(x, y, clusters)
    ks = _grid(xs, grid, min_side)
    k_hat, a, b, c, sse = _fit(xs, ys, ks)
    boot = _bootstrap(xs, ys, codes, ks, rng, n_resamples)
    p = _sup_f_pvalue(xs, ys, codes, ks, rng, n_resamples)
    method = "cluster-bootstrap-percentile" if clusters is not None else "bootstrap-percentile"
    n = xs.size

    def est(value: float, draws: Floats) -> Estimate:
        return _percentile(value, draws, n, method, conf)

    sign = -1.0 if worse == "down" else 1.0
    changes = p < 1.0 - conf
    after = est(b + c, boot[:, 1] + boot[:, 2])
    # worse faster after the knee, and worsening there beyond its interval: a curve that rises
    # and then levels off has a slope change in the "worse" direction but does not degrade
    worsening = after.high < 0 if worse == "down" else after.low > 0
    accelerates = changes and sign * c > 0 and worsening
    if accelerates:
        verdict = f"accelerates beyond {x_format.format(k_hat)}"
    elif changes:
        verdict = (
            f"the slope changes at {x_format.format(k_hat)} but the curve does not worsen "
            "faster beyond it"
        )
    else:
        verdict = "no evidence of acceleration"
    return Knee(
        knee=est(k_hat, boot[:, 0]),
        slope_before=est(b, boot[:, 1]),
        slope_after=after,
        slope_change=est(c, boot[:, 2]),
        intercept=a,
        sse=sse,
        p_value=p,
        test=TEST,
        verdict=verdict,
        accelerates=bool(accelerates),
        n_clusters=int(codes.max()) + 1,
    )


def _check(
    x: npt.ArrayLike, y: npt.ArrayLike, clusters: Sequence[Hashable] | None
) -> tuple[Floats, Floats, npt.NDArray[np.intp]]:
    xs = np.asarray(x, dtype=np.float64).ravel()
    ys = np.asarray(y, dtype=np.float64).ravel()
    if xs.size != ys.size:
        raise ValueError(f"x and y must have the same length, got {xs.size} and {ys.size}")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise ValueError("x and y must be finite: drop errored rows (NaN) before fitting a knee")
    if clusters is None:
        return xs, ys, np.arange(xs.size, dtype=np.intp)
    if len(clusters) != xs.size:
        raise ValueError(
            f"clusters must have one label per row, got {len(clusters)} for {xs.size} rows"
        )
    codes = cluster_codes(clusters)
    if int(codes.max(initial=-1)) + 1 < 2:
        raise ValueError("need at least 2 clusters to resample")
    return xs, ys, codes


def _grid(xs: Floats, grid: npt.ArrayLike | None, min_side: int) -> Floats:
    """Candidate breakpoints strictly between the ``min_side``-th lowest and highest x level."""
    if min_side < 1:
        raise ValueError(f"min_side must be at least 1, got {min_side}")
    levels = np.unique(xs)
    need = max(3, 2 * min_side)
    if levels.size < need:
        raise ValueError(
            f"a knee needs at least {need} distinct x levels ({min_side} on each side of "
            f"the breakpoint), got {levels.size}"
        )
    lo, hi = float(levels[min_side - 1]), float(levels[-min_side])
    if grid is None:
        return np.linspace(lo, hi, GRID_POINTS + 2)[1:-1]
    ks = np.unique(np.asarray(grid, dtype=np.float64).ravel())
    ks = ks[(ks > lo) & (ks < hi)]
    if ks.size == 0:
        raise ValueError(f"no grid point lies strictly inside ({lo:g}, {hi:g})")
    return ks


def _hinge(xs: Floats, ks: Floats) -> Floats:
    return np.maximum(0.0, xs[:, None] - ks[None, :])


def _ols(xs: Floats, ys: Floats, k: float) -> tuple[Floats, float]:
    design = np.column_stack([np.ones_like(xs), xs, np.maximum(0.0, xs - k)])
    coef = np.linalg.lstsq(design, ys, rcond=None)[0]
    resid = ys - design @ coef
    return coef, float(resid @ resid)


def _fit(xs: Floats, ys: Floats, ks: Floats) -> tuple[float, float, float, float, float]:
    """Profile the SSE over ``ks``, refine around the best grid point, return k, a, b, c, SSE."""
    drop = _sse_drop(np.ones((1, xs.size)), xs, ys, ks)[0][0]
    j = int(np.argmax(drop))
    lo, hi = ks[max(j - 1, 0)], ks[min(j + 1, ks.size - 1)]
    k_best = float(ks[j])
    sse_best = _ols(xs, ys, k_best)[1]
    if hi > lo:
        res = minimize_scalar(
            lambda k: _ols(xs, ys, float(k))[1],
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-12},
        )
        if float(res.fun) < sse_best:
            k_best = float(res.x)
    coef, sse = _ols(xs, ys, k_best)
    return k_best, float(coef[0]), float(coef[1]), float(coef[2]), sse


def _sse_drop(w: Floats, xs: Floats, ys: Floats, ks: Floats) -> tuple[Floats, Floats, Floats]:
    """For row weights ``w`` (B x n): the SSE drop D(k), slope change c(k) and slope before
    b(k) of the weighted hinge fit at every grid point (each B x K), from weighted sums."""
    h = _hinge(xs, ks)
    s1, sx, sxx = w.sum(1), w @ xs, w @ (xs * xs)
    sy, sxy = w @ ys, w @ (xs * ys)
    sh, shx, shh, shy = w @ h, w @ (xs[:, None] * h), w @ (h * h), w @ (ys[:, None] * h)
    det = s1 * sxx - sx * sx
    with np.errstate(divide="ignore", invalid="ignore"):
        by0, by1 = (sxx * sy - sx * sxy) / det, (s1 * sxy - sx * sy) / det
        bh0 = (sxx[:, None] * sh - sx[:, None] * shx) / det[:, None]
        bh1 = (s1[:, None] * shx - sx[:, None] * sh) / det[:, None]
        hy = shy - (sh * by0[:, None] + shx * by1[:, None])
        hh = shh - (sh * bh0 + shx * bh1)
        ok = hh > 1e-12 * np.maximum(shh, 1e-300)
        c = np.where(ok, hy / hh, np.nan)
        drop = np.where(ok, hy * c, -np.inf)
    return drop, c, by1[:, None] - c * bh1


def _chunks(n_resamples: int, width: int) -> list[int]:
    rows = max(1, CHUNK_CELLS // max(width, 1))
    return [min(rows, n_resamples - s) for s in range(0, n_resamples, rows)]


def _bootstrap(
    xs: Floats,
    ys: Floats,
    codes: npt.NDArray[np.intp],
    ks: Floats,
    rng: np.random.Generator,
    n_resamples: int,
) -> Floats:
    """(B x 3) bootstrap knee, slope before and slope change, resampling clusters (rows of
    ``codes``) with replacement; a resample where no breakpoint is estimable is NaN."""
    g = int(codes.max()) + 1
    out = np.full((n_resamples, 3), np.nan)
    start = 0
    for m in _chunks(n_resamples, max(xs.size, ks.size)):
        counts = rng.multinomial(g, np.full(g, 1.0 / g), size=m).astype(np.float64)
        drop, c, b = _sse_drop(counts[:, codes], xs, ys, ks)
        j = np.argmax(drop, axis=1)
        rows = np.arange(m)
        good = np.isfinite(drop[rows, j])
        out[start : start + m] = np.where(
            good[:, None], np.column_stack([ks[j], b[rows, j], c[rows, j]]), np.nan
        )
        start += m
    return out


def _sup_f_pvalue(
    xs: Floats,
    ys: Floats,
    codes: npt.NDArray[np.intp],
    ks: Floats,
    rng: np.random.Generator,
    n_resamples: int,
) -> float:
    """Wild cluster bootstrap p-value of sup_k F(k) under the straight-line null."""
    q = np.linalg.qr(np.column_stack([np.ones_like(xs), xs]))[0]
    h = _hinge(xs, ks)
    h_t = h - q @ (q.T @ h)
    hh = np.einsum("ij,ij->j", h_t, h_t)
    ok = hh > 1e-12 * np.maximum(np.einsum("ij,ij->j", h, h), 1e-300)
    h_t, hh = h_t[:, ok], hh[ok]
    resid = ys - q @ (q.T @ ys)

    def sup_f(e: Floats) -> Floats:  # e: B x n, not yet orthogonal to [1, x]
        e_t = e - (e @ q) @ q.T
        drop = (e_t @ h_t) ** 2 / hh
        sse0 = np.einsum("ij,ij->i", e_t, e_t)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = drop / np.maximum(sse0[:, None] - drop, 1e-300)
        return np.asarray(f.max(axis=1), dtype=np.float64)

    if float(resid @ resid) <= 1e-24 * max(float(ys @ ys), 1e-300):
        return 1.0  # exactly a straight line: nothing to test
    observed = float(sup_f(resid[None, :])[0])
    g = int(codes.max()) + 1
    exceed = 0
    for m in _chunks(n_resamples, max(xs.size, ks.size)):
        signs = rng.choice(np.array([-1.0, 1.0]), size=(m, g))
        exceed += int(np.sum(sup_f(signs[:, codes] * resid) >= observed * (1 - 1e-12)))
    return (1 + exceed) / (n_resamples + 1)


def _percentile(value: float, draws: Floats, n: int, method: str, conf: float) -> Estimate:
    good = draws[np.isfinite(draws)]
    if good.size == 0:
        return Estimate(value, float("nan"), float("nan"), n, method, conf)
    alpha = (1.0 - conf) / 2
    low, high = np.quantile(good, [alpha, 1.0 - alpha])
    return Estimate(value, float(low), float(high), n, method, conf)

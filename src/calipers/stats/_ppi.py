"""Prediction-powered inference: a mean (or rate) from n human labels and N judge labels.

A judge (an LLM or a classifier) labels many items cheaply; people label a few. The judge's
rate alone is biased by its errors, and its interval does not know it; the human rate alone
is unbiased but wide. PPI (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023,
"Prediction-powered inference", Science 382:669-674) uses the n items both labelled to
measure the judge's error and corrects the judge's rate on N more items with it::

    theta = mean(Yhat_N) + mean(Y_n - Yhat_n)                      (lambda = 1, PPI)

PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient prediction-powered inference",
arXiv:2311.01453) weights the judge by a power-tuning ``lambda`` estimated from the data::

    theta(l) = mean(Y_n) + l * (mean(Yhat_N) - mean(Yhat_n))
    Var(l)   = l^2 Var(Yhat) / N + Var(Y - l Yhat) / n
    l*       = Cov(Y, Yhat) / ((1 + n/N) Var(Yhat))                 (minimises Var), in [0, 1]

so a useless judge gets ``lambda = 0`` (the human-only mean) and the interval is never much
wider than the human-only one. ``theta(l)`` is unbiased for every fixed ``l``.

Assumptions (the papers'): the n labelled items are a uniform random sample of the same
population as the N unlabelled ones (not chosen because the judge was unsure), items are
independent, and n is large enough for the central limit theorem (the interval is the normal
one, ``theta +- z * sqrt(Var)``). We require ``n >= 30`` by default and, for 0/1 labels, at
least 10 human labels of each value (at n = 30 and a 10 % rate the normal interval covers only
85 %); otherwise the result falls back to the human labels alone (Wilson interval for 0/1,
``lambda = 0``), and says so in its method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from calipers.stats._proportion import check_confidence, wilson
from calipers.types import Estimate

__all__ = ["PPIResult", "ppi_difference", "ppi_lambda", "ppi_mean"]

Floats = npt.NDArray[np.float64]
_MIN_PER_CLASS = 10  # 0/1 human labels: fewer 0s or 1s than this and the CLT interval under-covers


@dataclass(frozen=True, slots=True)
class PPIResult:
    """A judge-corrected mean and what it is compared with.

    ``estimate`` is the corrected mean (method ``"ppi++"``, ``"ppi"`` for a fixed
    ``lam=1``, ``"ppi(lambda=...)"`` for another fixed one, or ``"human-only-small-n"`` for
    the fallback); its ``n`` is the number of human labels. ``n_unlabelled`` is N, ``lam`` the
    weight given to the judge, ``se`` the standard error behind the interval. ``human_only``
    is the human labels alone (Wilson for 0/1 labels, else the normal interval);
    ``naive_judge`` is the judge's mean on all n + N items with the interval a reader would
    draw from it if the judge were right (Wilson for 0/1), which ignores the judge's error.
    """

    estimate: Estimate
    n_unlabelled: int
    lam: float
    se: float
    human_only: Estimate
    naive_judge: Estimate


def _z(confidence: float) -> float:
    return -NormalDist().inv_cdf((1.0 - confidence) / 2.0)


def _is_binary(*arrays: Floats) -> bool:
    return all(bool(np.isin(a, (0.0, 1.0)).all()) for a in arrays)


def _normal_interval(value: float, se: float, n: int, method: str, c: float) -> Estimate:
    half = _z(c) * se
    return Estimate(value, value - half, value + half, n, method, c)


def _plain_mean(x: Floats, binary: bool, c: float) -> Estimate:
    if x.size == 0:
        return Estimate.empty("wilson" if binary else "normal", c)
    if binary:
        return wilson(int(x.sum()), int(x.size), c)
    se = float(x.std(ddof=1)) / math.sqrt(x.size) if x.size > 1 else math.inf
    return _normal_interval(float(x.mean()), se, int(x.size), "normal", c)


def _floats(x: npt.ArrayLike) -> Floats:
    return np.asarray(x, dtype=np.float64).reshape(-1)


def _check(y: Floats, yhat: Floats, yhat_unlabelled: Floats) -> None:
    if y.shape != yhat.shape:
        raise ValueError(
            f"y and yhat must label the same items: got {y.size} human and {yhat.size} judge labels"
        )
    for name, a in (("y", y), ("yhat", yhat), ("yhat_unlabelled", yhat_unlabelled)):
        if not np.isfinite(a).all():
            raise ValueError(f"{name} has NaN or infinite values; drop unlabelled items first")


def ppi_lambda(y: npt.ArrayLike, yhat: npt.ArrayLike, yhat_unlabelled: npt.ArrayLike) -> float:
    """The PPI++ power-tuning weight ``Cov(Y, Yhat) / ((1 + n/N) Var(Yhat))``, clipped to [0, 1].

    The covariance is over the n labelled items, the judge's variance over all n + N items
    (both sample moments, ``ddof=1``). A constant judge, n < 2 or N = 0 gets 0.
    """
    ys, fs, fu = _floats(y), _floats(yhat), _floats(yhat_unlabelled)
    _check(ys, fs, fu)
    n, big_n = ys.size, fu.size
    if n < 2 or big_n < 1:
        return 0.0
    var_f = float(np.var(np.concatenate([fs, fu]), ddof=1))
    if var_f <= 0.0:
        return 0.0
    cov = float(np.cov(ys, fs, ddof=1)[0, 1])
    return float(np.clip(cov / ((1.0 + n / big_n) * var_f), 0.0, 1.0))


def _ppi_se(y: Floats, yhat: Floats, yhat_unlabelled: Floats, lam: float) -> float:
    var_unl = float(np.var(lam * yhat_unlabelled, ddof=1)) if yhat_unlabelled.size > 1 else 0.0
    var_rect = float(np.var(y - lam * yhat, ddof=1))
    return math.sqrt(var_unl / yhat_unlabelled.size + var_rect / y.size)


def _method(lam: float | None) -> str:
    if lam is None:
        return "ppi++"
    return "ppi" if lam == 1.0 else f"ppi(lambda={lam:g})"


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    *,
    lam: float | None = None,
    confidence: float = 0.95,
    min_n: int = 30,
) -> PPIResult:
    """The mean of Y (e.g. a pass rate) from human labels ``y`` and the judge's ``yhat`` on the
    same n items, plus the judge's ``yhat_unlabelled`` on N further items.

    ``lam=None`` estimates the PPI++ weight (:func:`ppi_lambda`); ``lam=1`` is classic PPI,
    ``lam=0`` the human-only mean with the normal interval. The interval is the normal (CLT)
    one of both papers, ``theta +- z * se`` with
    ``se^2 = Var(lam * Yhat_N) / N + Var(Y_n - lam * Yhat_n) / n``; for 0/1 labels its bounds
    are clipped to [0, 1]. With ``lam`` estimated the interval is asymptotically valid
    (PPI++, Theorem 1); at n = 150 and N = 2,000 it covers 93-97 % in simulation (see
    ``tests/stats/test_ppi.py``).

    Fewer than ``min_n`` human labels (default 30), or for 0/1 labels fewer than 10 human 0s or
    1s (the CLT is not to be trusted there), or no unlabelled items: the estimate is the
    human-only one (Wilson for 0/1), ``lam = 0``, method ``"human-only-small-n"``; label more
    items rather than lean on the judge. No human labels give ``Estimate.empty``. Values must
    be finite: drop unlabelled items before calling.
    """
    c = check_confidence(confidence)
    ys, fs, fu = _floats(y), _floats(yhat), _floats(yhat_unlabelled)
    _check(ys, fs, fu)
    if lam is not None and not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1] or None, got {lam!r}")
    binary = _is_binary(ys, fs, fu)
    human = _plain_mean(ys, binary, c)
    naive = _plain_mean(np.concatenate([fs, fu]), _is_binary(fs, fu), c)
    n, big_n = int(ys.size), int(fu.size)
    rare = binary and min(ys.sum(), n - ys.sum()) < _MIN_PER_CLASS
    if n < max(2, min_n) or big_n == 0 or rare:
        method = "human-only-small-n" if n else _method(lam)
        if n == 0:
            return PPIResult(Estimate.empty(method, c), big_n, 0.0, math.nan, human, naive)
        se = float(ys.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
        est = Estimate(human.value, human.low, human.high, n, method, c)
        return PPIResult(est, big_n, 0.0, se, human, naive)
    used = ppi_lambda(ys, fs, fu) if lam is None else float(lam)
    value = float(ys.mean() + used * (fu.mean() - fs.mean()))
    se = _ppi_se(ys, fs, fu, used)
    est = _normal_interval(value, se, n, _method(lam), c)
    if binary:
        est = Estimate(value, max(0.0, est.low), min(1.0, est.high), n, est.method, c)
    return PPIResult(est, big_n, used, se, human, naive)


def ppi_difference(a: PPIResult, b: PPIResult) -> Estimate:
    """``a - b`` for two judge-corrected means from independent items (e.g. two models, each
    with its own labelled and unlabelled items); normal interval with ``se^2 = se_a^2 + se_b^2``
    at ``a``'s confidence (method ``"ppi++-difference"``; ``n`` is the human labels of both).

    Each arm's own ``lambda`` minimises its own variance, hence that of the difference. Both
    arms must have used the CLT (not the small-n fallback): with fewer human labels, compare
    the human labels alone (``unpaired_difference``). For two models scored on the *same*
    items, call :func:`ppi_mean` on the per-item differences instead (``y_a - y_b`` and
    ``yhat_a - yhat_b``), which uses the pairing.
    """
    if a.estimate.confidence != b.estimate.confidence:
        raise ValueError("both arms must have the same confidence")
    c = a.estimate.confidence
    if a.estimate.is_empty or b.estimate.is_empty:
        return Estimate.empty("ppi++-difference", c)
    for arm in (a, b):
        if arm.estimate.method == "human-only-small-n":
            raise ValueError(
                f"an arm has only {arm.estimate.n} human labels (below the CLT minimum): "
                "compare the human labels directly with unpaired_difference"
            )
    value = a.estimate.value - b.estimate.value
    se = math.hypot(a.se, b.se)
    return _normal_interval(value, se, a.estimate.n + b.estimate.n, "ppi++-difference", c)

"""Power for paired comparisons: minimum detectable effect and items needed (normal theory).

Follows Miller (2024), "Adding Error Bars to Evals" (arXiv:2411.00640): a paired design has
``Var(b - a) = Var(a) + Var(b) - 2 Cov(a, b)``, so the more the two models agree item by item,
the fewer items it takes to see a difference; clustered items inflate the variance by the
design effect ``1 + (m - 1) ICC``.
"""

from __future__ import annotations

import math

from scipy import stats

__all__ = ["check_alpha_power", "mde_paired", "sample_size_paired", "unpaired_sample_size"]


def check_alpha_power(alpha: float, power: float) -> float:
    """``z_{1-alpha/2} + z_{power}``, or ValueError unless both are strictly in (0, 1)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be strictly between 0 and 1, got {power!r}")
    return float(stats.norm.ppf(1.0 - alpha / 2) + stats.norm.ppf(power))


def _proportion(name: str, p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {p!r}")
    return float(p)


def _ceil(x: float) -> int:
    # (z^2 var / delta^2) can land a few ulps above a whole number it equals exactly.
    return max(1, math.ceil(x - 1e-9))


def mde_paired(
    n: int,
    *,
    var_diff: float | None = None,
    p_discordant: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Smallest true |mean(b - a)| a two-sided paired test at ``alpha`` detects with ``power``.

    Give exactly one of:

    * ``var_diff``, the variance of the per-item difference ``b_i - a_i``:
      ``MDE = (z_{1-alpha/2} + z_power) * sqrt(var_diff / n)``;
    * ``p_discordant``, for 0/1 scores: the share of items the two models disagree on. The
      variance of a 0/1 difference is ``p10 + p01 - (p10 - p01)^2``, about ``p_d`` when there is
      no true effect, so ``MDE = (z + z) sqrt(p_d / n)``. A difference ``delta`` also needs at
      least ``delta`` discordance, so the MDE is never below the ``delta`` solving
      ``delta = (z + z) sqrt(delta / n)``, i.e. ``(z + z)^2 / n``: with no disagreement seen
      (``p_d = 0``) that is the honest answer, not 0.
    """
    if n < 1 or int(n) != n:
        raise ValueError(f"n must be a positive whole number, got {n!r}")
    if (var_diff is None) == (p_discordant is None):
        raise ValueError("give exactly one of var_diff and p_discordant")
    k = check_alpha_power(alpha, power)
    if var_diff is not None:
        if not var_diff >= 0.0 or math.isinf(var_diff):
            raise ValueError(f"var_diff must be finite and non-negative, got {var_diff!r}")
        return k * math.sqrt(var_diff / n)
    p_d = _proportion("p_discordant", float(p_discordant))  # type: ignore[arg-type]
    return max(k * math.sqrt(p_d / n), k * k / n)


def _design_effect(icc: float | None, cluster_size: float | None) -> float:
    if icc is None and cluster_size is None:
        return 1.0
    if icc is None or cluster_size is None:
        raise ValueError("give both clusters_icc and cluster_size, or neither")
    if not 0.0 <= icc <= 1.0:
        raise ValueError(f"clusters_icc must be between 0 and 1, got {icc!r}")
    if not cluster_size >= 1.0:
        raise ValueError(f"cluster_size must be at least 1, got {cluster_size!r}")
    return 1.0 + (cluster_size - 1.0) * icc


def _check_delta(delta: float) -> float:
    d = abs(float(delta))
    if not (math.isfinite(d) and d > 0.0):
        raise ValueError(f"delta must be a non-zero finite difference, got {delta!r}")
    return d


def _miller_var(delta: float, baseline: float, r: float) -> float:
    pa = _proportion("baseline_acc", baseline)
    pb = _proportion("baseline_acc + delta", baseline + delta)
    if not -1.0 <= r <= 1.0:
        raise ValueError(f"correlation must be between -1 and 1, got {r!r}")
    var = pa * (1 - pa) + pb * (1 - pb) - 2 * r * math.sqrt(pa * (1 - pa) * pb * (1 - pb))
    # Two 0/1 scores whose means differ by delta disagree on at least |delta| of the items,
    # so Var(b - a) >= |delta| (1 - |delta|) whatever the stated correlation.
    return max(var, abs(delta) * (1 - abs(delta)))


def sample_size_paired(
    delta: float,
    *,
    baseline_acc: float | None = None,
    correlation: float | None = None,
    var_diff: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    clusters_icc: float | None = None,
    cluster_size: float | None = None,
) -> int:
    """Items needed, both models scored on each, to detect a true difference ``delta``.

    ``n = ceil((z_{1-alpha/2} + z_power)^2 * Var(b - a) * DE / delta^2)`` (Miller 2024).
    ``Var(b - a)`` is ``var_diff`` if given; otherwise, for accuracies ``p_a = baseline_acc``
    and ``p_b = baseline_acc + delta`` whose per-item scores correlate by ``correlation``
    (default 0, which gives no credit for pairing)::

        Var(b - a) = p_a(1-p_a) + p_b(1-p_b) - 2 r sqrt(p_a(1-p_a) p_b(1-p_b))

    floored at ``|delta|(1 - |delta|)``, the least a 0/1 difference with mean ``delta`` can
    have (two binary scores with different means cannot correlate perfectly). With clustered
    items, ``DE = 1 + (cluster_size - 1) * clusters_icc``, else 1.
    """
    d = _check_delta(delta)
    k = check_alpha_power(alpha, power)
    if var_diff is not None:
        if baseline_acc is not None or correlation is not None:
            raise ValueError("give var_diff, or baseline_acc (and correlation), not both")
        if not 0.0 < var_diff < math.inf:
            raise ValueError(f"var_diff must be positive and finite, got {var_diff!r}")
        var = float(var_diff)
    elif baseline_acc is None:
        raise ValueError("give baseline_acc (and correlation) or var_diff")
    else:
        var = _miller_var(float(delta), float(baseline_acc), float(correlation or 0.0))
    return _ceil(k * k * var * _design_effect(clusters_icc, cluster_size) / d**2)


def unpaired_sample_size(
    delta: float,
    *,
    baseline_acc: float,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Items per model when the two scores are treated as independent (no pairing).

    ``n = ceil((z + z)^2 (p_a(1-p_a) + p_b(1-p_b)) / delta^2)``: the paired formula with
    correlation 0. Any positive correlation between the models' per-item scores makes the
    paired design need fewer items; an unpaired test on paired data throws that away.
    """
    d = _check_delta(delta)
    k = check_alpha_power(alpha, power)
    pa = _proportion("baseline_acc", float(baseline_acc))
    pb = _proportion("baseline_acc + delta", float(baseline_acc) + float(delta))
    return _ceil(k * k * (pa * (1 - pa) + pb * (1 - pb)) / d**2)

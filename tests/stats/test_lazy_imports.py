"""A run's finalize needs Wilson intervals and bootstrap means; computing them must not import
scipy, statsmodels or pandas (1-2 s of a cached re-run), and must agree with them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from calipers.stats import wilson

_PROBE = """
import json, sys
import numpy as np
from calipers.stats import bootstrap_mean, summarize, wilson
wilson(3, 10)
bootstrap_mean(np.arange(30.0) ** 1.5, rng=np.random.default_rng(0))
summarize([1.0, 0.0, 1.0, 1.0], rng=np.random.default_rng(0))
summarize([0.2, 0.9, 0.4, 0.7], rng=np.random.default_rng(0))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def test_finalize_statistics_import_no_scipy_or_statsmodels() -> None:
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    modules = set(json.loads(out.strip().splitlines()[-1]))
    assert "numpy" in modules
    assert not modules & {"scipy", "statsmodels", "pandas"}


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_wilson_agrees_with_statsmodels(confidence: float) -> None:
    for n in [*range(1, 41), 97, 1000, 12345]:
        for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
            est = wilson(k, n, confidence)
            low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
            assert est.low == pytest.approx(max(0.0, min(low, k / n)), abs=1e-15)
            assert est.high == pytest.approx(min(1.0, max(high, k / n)), abs=1e-15)


def test_bca_normal_quantiles_agree_with_scipy() -> None:
    """The BCa interval uses the standard library's normal cdf and quantile: the same bounds
    as with scipy.stats.norm, to rounding."""
    from calipers.stats import _resample

    rng = np.random.default_rng(7)
    values = rng.exponential(size=200)
    draws = np.array([rng.choice(values, values.size).mean() for _ in range(2000)])
    low, high, method = _resample._bca(draws, values, 0.95)
    theta, e = values.mean(), values - values.mean()
    below = np.mean(draws < theta)
    z0, zq = sps.norm.ppf(below), sps.norm.ppf([0.025, 0.975])
    accel = np.sum(e**3) / (6 * np.sum(e * e) ** 1.5)
    expected = np.quantile(draws, sps.norm.cdf(z0 + (z0 + zq) / (1 - accel * (z0 + zq))))
    assert method == "bca"
    assert (low, high) == pytest.approx(tuple(expected), abs=1e-12)

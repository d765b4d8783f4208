"""A/A simulation: two identical models, the decision looked at every 50 requests.

Hundreds of seeded experiments run at once (the metric paths are vectorised over
experiments); each stops at its first look whose decision is not "keep watching". With the
always-valid tests the share of such false decisions (a false promote plus a false roll back)
stays at or below alpha; a naive fixed-n test of the primary metric, looked at the same way,
goes far above it. The guardrails and the alpha split are those of ``calipers ab``
(``calipers.monitor._ab``), through the same functions.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from scipy import stats

from calipers.monitor._ab import DEFAULT_TOLERANCES
from calipers.monitor._ab_metrics import (
    MetricPath,
    decide_at,
    exceed_p95,
    interleave,
    paired_metric,
    two_sample_metric,
)

ALPHA = 0.05
STREAMS = 300
N = 2000  # requests per experiment
EVERY = 50  # a look every 50 requests
LOOKS = range(EVERY, N + 1, EVERY)
# Binomial margin: alpha + 2.33 standard errors of a share of 300 (one-sided 99%).
LIMIT = ALPHA + 2.33 * math.sqrt(ALPHA * (1 - ALPHA) / STREAMS)


def _arm(rng: np.random.Generator, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """One model's answers: judge score 0/1 (70% good), 2% errors, log-normal latency,
    3% refusals, a cost per request."""
    return {
        "score": (rng.random(shape) < 0.7).astype(float),
        "error": (rng.random(shape) < 0.02).astype(float),
        "latency": rng.lognormal(6.0, 0.5, shape),
        "refusal": (rng.random(shape) < 0.03).astype(float),
        "cost": rng.gamma(2.0, 1e-5, shape),
    }


def _paired(rng: np.random.Generator) -> tuple[MetricPath, list[MetricPath], list[int]]:
    """Shadow: both models answer every request. Returns the primary metric, the guardrails
    and, per guardrail, observations per request (2 when the arms are interleaved)."""
    b, c = _arm(rng, (STREAMS, N)), _arm(rng, (STREAMS, N))
    a_g = ALPHA / 2 / 5
    tol = DEFAULT_TOLERANCES
    primary = paired_metric(
        "judge", c["score"] - b["score"], alpha=ALPHA / 2, what="", higher_is_better=True
    )
    err = two_sample_metric(
        "error_rate",
        *interleave(b["error"], c["error"]),
        alpha=a_g,
        what="",
        binary=True,
        tolerance=tol["error_rate"],
    )
    p50 = paired_metric(
        "latency_p50",
        np.log(c["latency"]) - np.log(b["latency"]),
        alpha=a_g,
        what="",
        tolerance=tol["latency_p50"],
        transform="expm1",
    )
    values, treated = interleave(b["latency"], c["latency"])
    over, keep = exceed_p95(values, treated, warm=200, blocks=40)
    p95 = two_sample_metric(
        "latency_p95",
        over[:, keep],
        treated[keep],
        alpha=a_g,
        what="",
        binary=True,
        tolerance=tol["latency_p95"],
    )
    ref = two_sample_metric(
        "refusal_rate",
        *interleave(b["refusal"], c["refusal"]),
        alpha=a_g,
        what="",
        binary=True,
        tolerance=tol["refusal_rate"],
    )
    cost = paired_metric(
        "cost", c["cost"] - b["cost"], alpha=a_g, what="", tolerance=tol["cost"] * 2e-5
    )
    return primary, [err, p50, p95, ref, cost], [2, 1, 2, 2, 1]


def _two_sample(
    rng: np.random.Generator, share: float
) -> tuple[MetricPath, list[MetricPath], list[int]]:
    """Canary: each request goes to one model; the same metrics between the groups."""
    treated = rng.random((STREAMS, N)) < share
    b, c = _arm(rng, (STREAMS, N)), _arm(rng, (STREAMS, N))
    x = {k: np.where(treated, c[k], b[k]) for k in b}
    a_g = ALPHA / 2 / 5
    tol = DEFAULT_TOLERANCES

    metric = partial(two_sample_metric, what="")
    primary = metric(
        "judge", x["score"], treated, alpha=ALPHA / 2, binary=True, higher_is_better=True
    )
    over, keep = exceed_p95(x["latency"], treated, warm=100, blocks=40)
    rails = [
        metric(
            "error_rate", x["error"], treated, alpha=a_g, binary=True, tolerance=tol["error_rate"]
        ),
        metric(
            "latency_p50",
            np.log(x["latency"]),
            treated,
            alpha=a_g,
            tolerance=tol["latency_p50"],
            transform="expm1",
        ),
        _p95_two_sample(over[:, keep], treated[:, keep], a_g),
        metric(
            "refusal_rate",
            x["refusal"],
            treated,
            alpha=a_g,
            binary=True,
            tolerance=tol["refusal_rate"],
        ),
        metric("cost", x["cost"], treated, alpha=a_g, tolerance=tol["cost"] * 2e-5),
    ]
    return primary, rails, [1, 1, 1, 1, 1]


def _p95_two_sample(values: np.ndarray, treated: np.ndarray, alpha: float) -> MetricPath:
    return two_sample_metric(
        "latency_p95",
        values,
        treated,
        alpha=alpha,
        what="",
        binary=True,
        tolerance=DEFAULT_TOLERANCES["latency_p95"],
    )


def _false_decisions(
    primary: MetricPath, rails: list[MetricPath], per_request: list[int], offset: dict[str, int]
) -> dict[str, int]:
    """Each experiment stops at its first look with a decision; count the decisions."""
    counts = {"promote": 0, "roll_back": 0, "keep_watching": 0}
    for s in range(STREAMS):
        action = "keep_watching"
        for k in LOOKS:
            ks = [
                per * k - offset.get(g.name, 0) for g, per in zip(rails, per_request, strict=True)
            ]
            action = decide_at(primary, rails, k=k, guardrail_k=ks, stream=s).action
            if action != "keep_watching":
                break
        counts[action] += 1
    return counts


def _naive_share(d_or_values: np.ndarray, treated: np.ndarray | None) -> float:
    """A z test of the primary metric at alpha/2 (what a fixed-n test would use), looked at
    every 50 requests from n = 100: the share of experiments that ever reject."""
    ever = np.zeros(STREAMS, dtype=bool)
    for k in LOOKS:
        if k < 100:
            continue
        if treated is None:
            x = d_or_values[:, :k]
            z = x.mean(1) / (x.std(1, ddof=1) / math.sqrt(k))
        else:
            x, t = d_or_values[:, :k], treated[:, :k]
            nb, na = t.sum(1), (~t).sum(1)
            mb = np.where(t, x, 0).sum(1) / nb
            ma = np.where(~t, x, 0).sum(1) / na
            vb = np.where(t, (x - mb[:, None]) ** 2, 0).sum(1) / (nb - 1)
            va = np.where(~t, (x - ma[:, None]) ** 2, 0).sum(1) / (na - 1)
            z = (mb - ma) / np.sqrt(vb / nb + va / na)
        ever |= 2 * stats.norm.sf(np.abs(z)) <= ALPHA / 2
    return float(ever.mean())


def test_aa_shadow_false_decisions_stay_at_alpha_under_peeking() -> None:
    rng = np.random.default_rng(20261101)
    primary, rails, per = _paired(rng)
    counts = _false_decisions(primary, rails, per, {"latency_p95": 200})
    false = (counts["promote"] + counts["roll_back"]) / STREAMS
    assert false <= LIMIT, counts
    # The same primary differences, tested naively at every look, are wrong far more often.
    d = np.asarray(primary.path.estimate)  # running means; rebuild the raw differences
    n = np.arange(1, N + 1)
    raw = np.diff(np.concatenate([np.zeros((STREAMS, 1)), d * n], axis=1), axis=1)
    assert _naive_share(raw, None) > 2 * ALPHA


@pytest.mark.parametrize("share", [0.5, 0.1])
def test_aa_canary_false_decisions_stay_at_alpha_under_peeking(share: float) -> None:
    rng = np.random.default_rng(int(share * 100))
    primary, rails, per = _two_sample(rng, share)
    counts = _false_decisions(primary, rails, per, {"latency_p95": 100})
    false = (counts["promote"] + counts["roll_back"]) / STREAMS
    assert false <= LIMIT, counts
    x = np.random.default_rng(int(share * 100) + 1).random((STREAMS, N)) < 0.7
    t = np.random.default_rng(int(share * 100) + 2).random((STREAMS, N)) < share
    assert _naive_share(x.astype(float), t) > 2 * ALPHA

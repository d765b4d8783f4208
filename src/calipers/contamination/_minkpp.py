"""Min-K%++ (Zhang et al. 2024, arXiv:2404.02936) of benchmark items against paired controls.

Per token, ``(log p(x_t | x_<t) - mu_t) / sigma_t`` where ``mu_t`` and ``sigma_t`` are the mean
and standard deviation of ``log p(z | x_<t)`` for ``z`` drawn from the model's own next-token
distribution: how far the actual token sits above what the model expected at that position.
An item's score is the mean of its lowest ``k`` share of those (the least "expected" tokens);
text seen in training lacks surprising tokens, so it scores higher. The control of each item is
the same text with its words shuffled (seeded): same length, same words, never published.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from calipers.contamination._controls import item_rng, item_text, shuffle_words
from calipers.contamination._result import (
    ItemScore,
    ProbeResult,
    Progress,
    model_name,
    paired_result,
    skipped,
)
from calipers.errors import ModelCallError, NotSupportedError
from calipers.models import ModelProvider
from calipers.types import Sample, TokenStatsRequest, TokenStatsResult

__all__ = ["MINKPP_CAVEAT", "min_k_pp", "min_k_pp_probe", "min_k_pp_score", "robust_z"]

PROBE = "min-k%++"
MINKPP_CAVEAT = (
    "Min-K%++ compares each item with the same words shuffled. A higher score means the "
    "model finds the item's tokens less surprising than its own next-token distribution "
    "predicts, which is what verbatim training exposure does; but shuffled text is also less "
    "fluent, so on a real model clean items score above their controls too. Read the "
    "difference against the same probe on items the model cannot have seen (a dynamic task): "
    "only an excess over that baseline is evidence of exposure, and even then it shows "
    "familiarity with the text, not that the answers were learned. Flags mark items whose gap is "
    "an outlier among these items: leads, not proof."
)
_SIGMA_MIN = 1e-12


def min_k_pp_score(stats: TokenStatsResult) -> npt.NDArray[np.float64]:
    """Per-token Min-K%++ scores ``(logprob - mean) / std``; 0 where the next-token
    distribution is a point mass (std 0: the token was the only possibility)."""
    lp, mu, sd = (
        np.asarray(v, dtype=np.float64)
        for v in (stats.logprobs, stats.mean_logprob, stats.std_logprob)
    )
    safe = np.where(sd > _SIGMA_MIN, sd, 1.0)
    out: npt.NDArray[np.float64] = np.where(sd > _SIGMA_MIN, (lp - mu) / safe, 0.0)
    return out


def min_k_pp(stats: TokenStatsResult, k: float = 0.2) -> float:
    """Mean of the lowest ``k`` share of the per-token scores: ``floor(k * n)`` tokens, at
    least one (the reference code takes ``int(n * k)``, which is 0 for short texts). NaN for a
    text with no tokens."""
    if not 0.0 < k <= 1.0:
        raise ValueError(f"k must be in (0, 1], got {k}")
    scores = np.sort(min_k_pp_score(stats))
    if scores.size == 0:
        return math.nan
    return float(scores[: max(1, int(scores.size * k))].mean())


def robust_z(values: npt.ArrayLike, null: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``(value - median(null)) / (1.4826 * MAD(null))``: how many (robust) standard
    deviations above the null distribution each value lies. Uses the standard deviation when
    the MAD is 0; NaN values stay NaN."""
    x = np.asarray(values, dtype=np.float64)
    ref = np.asarray(null, dtype=np.float64)
    ref = ref[~np.isnan(ref)]
    if ref.size < 2:
        return np.full(x.shape, math.nan)
    med = float(np.median(ref))
    scale = 1.4826 * float(np.median(np.abs(ref - med))) or float(np.std(ref, ddof=1))
    if scale == 0.0:
        return np.where(x > med, math.inf, 0.0)
    out: npt.NDArray[np.float64] = (x - med) / scale
    return out


async def _score(model: ModelProvider, text: str, k: float) -> float:
    try:
        return min_k_pp(await model.token_stats(TokenStatsRequest(text=text)), k)
    except ModelCallError:
        return math.nan


async def min_k_pp_probe(
    model: ModelProvider,
    samples: Sequence[Sample],
    *,
    k: float = 0.2,
    seed: int = 0,
    flag_z: float = 3.0,
    progress: Progress | None = None,
) -> ProbeResult:
    """Min-K%++ of each item's text (:func:`item_text`) and of its shuffled control.

    Flags items whose gap (item minus control) lies more than ``flag_z`` robust standard
    deviations (median and MAD of all the gaps) above the typical gap: outliers among the
    items. The shuffle's fluency loss is common to all items and cancels out of that
    comparison; a benchmark that is memorised as a whole shifts every gap and is not flagged
    item by item (compare with a reference set for that). A model without per-token
    statistics gives a skipped result with the reason. Calls are sequential
    (``progress(done, total)`` after each item).
    """
    name = model_name(model)
    settings = {"k": k, "seed": seed, "flag_z": flag_z, "control": "word-shuffle"}
    metric = f"Min-K%++ (k={k:g})"
    if not samples:
        return skipped(PROBE, metric, name, MINKPP_CAVEAT, "no items to probe", settings)
    if not model.supports_token_stats:
        try:  # a plugin provider may implement it without setting the flag
            await model.token_stats(TokenStatsRequest(text=item_text(samples[0])))
        except NotSupportedError as e:
            return skipped(PROBE, metric, name, MINKPP_CAVEAT, e.message, settings)
        except ModelCallError:
            pass  # it is supported; this item's failure is counted below
    raw: list[tuple[str, float, float]] = []
    for i, s in enumerate(samples):
        text = item_text(s)
        control = shuffle_words(text, item_rng(seed, s.id, PROBE))
        raw.append((s.id, await _score(model, text, k), await _score(model, control, k)))
        if progress is not None:
            progress(i + 1, len(samples))
    gaps = np.array([a - b for _, a, b in raw])
    z = robust_z(gaps, gaps)
    items = [
        ItemScore(i, a, b, bool(zz > flag_z), f"gap z={zz:.1f}")
        for (i, a, b), zz in zip(raw, z, strict=True)
    ]
    return paired_result(PROBE, metric, name, MINKPP_CAVEAT, items, seed=seed, settings=settings)

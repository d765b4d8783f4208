"""How realistic a suite is: its profile next to the production traffic it was drawn from.

Profiles: query length in characters (median and 90th percentile with order-statistic
intervals; the two length distributions compared by a two-sample Kolmogorov-Smirnov test),
the share of multi-turn conversations and the share of queries with a likely typo (Wilson
intervals; suite minus traffic with Newcombe's hybrid score interval, which treats the two as
independent samples: approximate, since the suite is drawn from the traffic), and coverage of
the production clusters.

A *likely typo* is a word of 4+ letters that is within one edit (insert, delete, substitute,
transpose) of a word at least 10 times as frequent in the same traffic (and seen 3+ times):
"pasword" next to "password". It needs no dictionary, works in any language written with
letters, and misses typos of rare words; it is a heuristic, and named so in the output.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from calipers.stats import ks_drift, quantile_interval, wilson
from calipers.suites._records import LogRecord
from calipers.types import Estimate

__all__ = ["compare_profiles", "likely_typos", "profile", "share_difference"]

_WORD = re.compile(r"[^\W\d_]+")


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _variants(w: str) -> set[str]:
    return {w} | {w[:i] + w[i + 1 :] for i in range(len(w))}


def likely_typos(
    texts: Iterable[str], *, min_len: int = 4, ratio: int = 10, min_count: int = 3
) -> set[str]:
    """Words that look like misspellings of a much more frequent word (module docstring)."""
    counts = Counter(w for t in texts for w in _words(t))
    index: dict[str, list[str]] = {}
    for w, c in counts.items():
        if c >= min_count and len(w) >= min_len - 1:
            for v in _variants(w):
                index.setdefault(v, []).append(w)
    typos = set()
    for w, c in counts.items():
        if len(w) < min_len:
            continue
        for v in _variants(w):
            if any(f != w and counts[f] >= ratio * c for f in index.get(v, ())):
                typos.add(w)
                break
    return typos


def _est(e: Estimate) -> dict[str, Any]:
    d = e.to_dict()
    return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in d.items()}


def _estimates(records: Sequence[LogRecord], typos: set[str]) -> dict[str, Estimate]:
    lengths = np.array([len(r.query) for r in records], dtype=np.float64)
    multi = sum(r.n_user_turns > 1 for r in records)
    typo = sum(any(w in typos for w in _words(r.user_text)) for r in records)
    return {
        "length_median": quantile_interval(lengths, 0.5),
        "length_p90": quantile_interval(lengths, 0.9),
        "multi_turn": wilson(multi, len(records)),
        "likely_typo": wilson(typo, len(records)),
    }


def _stored(n: int, estimates: dict[str, Estimate]) -> dict[str, Any]:
    return {"n": n, **{k: _est(e) for k, e in estimates.items()}}


def profile(records: Sequence[LogRecord], typos: set[str]) -> dict[str, Any]:
    return _stored(len(records), _estimates(records, typos))


def share_difference(a: Estimate, b: Estimate) -> Estimate:
    """``a - b`` for two Wilson estimates, Newcombe's hybrid score interval (method 10 of
    Newcombe 1998, independent samples)."""
    if a.is_empty or b.is_empty:
        return Estimate.empty("newcombe-unpaired", a.confidence)
    d = a.value - b.value
    low = d - math.sqrt((a.value - a.low) ** 2 + (b.high - b.value) ** 2)
    high = d + math.sqrt((a.high - a.value) ** 2 + (b.value - b.low) ** 2)
    return Estimate(
        d, max(-1.0, low), min(1.0, high), min(a.n, b.n), "newcombe-unpaired", a.confidence
    )


def compare_profiles(
    traffic: Sequence[LogRecord],
    suite: Sequence[LogRecord],
    traffic_clusters: Sequence[int],
    suite_clusters: Iterable[int],
) -> dict[str, Any]:
    """The suite's profile next to the traffic's, with the differences and cluster coverage.
    ``traffic_clusters[i]`` is the cluster of traffic record i (duplicates included)."""
    typos = likely_typos(r.user_text for r in traffic)
    te, se = _estimates(traffic, typos), _estimates(suite, typos)
    t, s = _stored(len(traffic), te), _stored(len(suite), se)
    ks = ks_drift([len(r.query) for r in traffic], [len(r.query) for r in suite])
    covered = set(suite_clusters)
    all_clusters = set(traffic_clusters)
    in_covered = sum(c in covered for c in traffic_clusters)
    return {
        "traffic": t,
        "suite": s,
        "length_ks": {
            "statistic": ks.statistic,
            "p_value": ks.p_value,
            "n_traffic": ks.n_reference,
            "n_suite": ks.n_current,
        },
        "difference": {
            k: _est(share_difference(se[k], te[k])) for k in ("multi_turn", "likely_typo")
        },
        "coverage": {
            "clusters_covered": len(covered & all_clusters),
            "clusters_total": len(all_clusters),
            "traffic_share": _est(wilson(in_covered, len(traffic_clusters))),
        },
        "typo_rule": "word of 4+ letters one edit away from a word 10x as frequent in the "
        "traffic (seen 3+ times)",
    }

"""Stratified sampling of a suite: every cluster keeps a floor of items, the rest follows the
traffic.

Allocation: proportional to each cluster's traffic (records including duplicates: what
production sees), but never below ``min(floor, its distinct items)``, so rare clusters stay in
the suite, and never above the items it has. Clusters a proportional share would push past
either bound are fixed at it and the other places are shared again among the rest (the usual
"minimum allocation" of stratified sampling); the integer parts are then completed by largest
remainder. Within a cluster the
items are drawn at random from a seeded generator.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["allocate", "stratified_sample"]


def _quotas(active: list[int], weight: Sequence[float], n: int) -> dict[int, float]:
    total = sum(weight[i] for i in active)
    if total <= 0:
        return {i: n / len(active) for i in active}
    return {i: n * weight[i] / total for i in active}


def allocate(capacity: Sequence[int], weight: Sequence[float], size: int, floor: int) -> list[int]:
    """Items per cluster: proportional to ``weight``, at least ``min(floor, capacity)`` and
    at most ``capacity`` each. The total is ``size`` (capped by the items available), or the
    sum of the floors when that is larger."""
    cap = [int(c) for c in capacity]
    low = [min(floor, c) for c in cap]
    alloc = list(low)
    active = list(range(len(cap)))
    left = min(size, sum(cap))
    while active:  # fix the clusters a proportional share would push past a bound
        if left <= sum(low[i] for i in active):
            return alloc  # the floors take every place
        quota = _quotas(active, weight, left)
        fixed = [i for i in active if quota[i] < low[i] or quota[i] > cap[i]]
        if not fixed:
            break
        for i in fixed:
            alloc[i] = low[i] if quota[i] < low[i] else cap[i]
            left -= alloc[i]
            active.remove(i)
    if not active:
        return alloc
    quota = _quotas(active, weight, left)
    for i in active:
        alloc[i] = int(quota[i])
    rest = left - sum(alloc[i] for i in active)  # largest remainders take the rest
    for i in sorted(active, key=lambda i: (-(quota[i] - int(quota[i])), i))[:rest]:
        alloc[i] += 1
    return alloc


def stratified_sample(
    labels: Sequence[int], weight: Sequence[float], size: int, floor: int, rng: np.random.Generator
) -> list[int]:
    """Indices into ``labels`` (sorted), drawn per cluster as :func:`allocate` says;
    ``weight[i]`` is how much traffic item i stands for."""
    clusters = sorted(set(labels))
    members = {c: [i for i, lab in enumerate(labels) if lab == c] for c in clusters}
    alloc = allocate(
        [len(members[c]) for c in clusters],
        [sum(weight[i] for i in members[c]) for c in clusters],
        size,
        floor,
    )
    chosen: list[int] = []
    for c, n in zip(clusters, alloc, strict=True):
        chosen.extend(int(i) for i in rng.choice(members[c], size=n, replace=False))
    return sorted(chosen)

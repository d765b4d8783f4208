"""Model equality testing: do two sets of sampled completions come from the same model?

The data are completions of a fixed set of probes (prompts), a few per probe from each side:
``reference[probe]`` and ``candidate[probe]``. Two tests, both with a permutation null that
permutes the reference/candidate labels *within each probe* (stratified), which is exact under
the null that, probe by probe, both sides sample the same distribution:

- **MMD** (Gao, Liang & Guestrin, ICLR 2025, "Model Equality Testing"): the kernel over
  (prompt, completion) pairs is the Hamming string kernel of :mod:`._string_kernel` times the
  indicator of equal prompts, so the squared MMD of the joint distributions (prompts uniform
  over the probe set) is the mean over probes of each probe's squared MMD, and its unbiased
  estimate is the mean of the per-probe unbiased estimates (Gretton et al. 2012, eq. 3). One
  sided: large values mean the sides differ. The paper samples prompts at random (about 10
  completions per prompt on average) and calibrates by simulation or permutation; here every
  probe gets the same number of samples (a fixed design), so the permutation is stratified by
  probe and the probe mix can never differ between the sides.
- **Rank** (van Elteren's stratified rank sum, calibrated by permutation): every completion is
  scored by its mean kernel similarity to the *reference* completions of its probe (leaving
  itself out when it is one of them), the scores are ranked within the probe, and the
  candidate's rank sums are combined over probes with van Elteren's weights ``1/(N_j + 1)``
  (locally most powerful when strata differ in size; with equal strata it is the plain sum).
  Two sided: candidates ranked low look unlike the reference (another model, another system
  prompt); candidates ranked high collapse onto the reference's common answers (a lower
  temperature). Ranks make it robust to a few probes whose long, fixed completions would
  dominate a sum of kernel values, which MMD is not. The textbook van Elteren variance assumes
  independent observations, and these scores are not (every score reads the same reference
  completions), so the p-value comes from the same stratified permutations instead of the
  normal approximation; permuting the labels re-scores everything, so the test is exact.

Per-probe p-values come from the same permutations and are adjusted with Holm
(:func:`calipers.stats.adjust`) to say which probes moved. :func:`equality_tests` runs both and
decides with the Holm-adjusted smaller p-value, so the two tests together keep the false-alarm
rate at ``alpha``. :func:`equality_power` estimates by resampling how often that decision
rejects (a Wilson interval over repetitions); :func:`resample_check` draws one resampled check
from pools of completions, optionally with a share ``epsilon`` of the candidate's completions
from another pool (a mixture: some traffic from another model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats._multiple import adjust
from calipers.stats._proportion import wilson
from calipers.stats._string_kernel import hamming_codes, hamming_kernel
from calipers.types import Estimate

__all__ = [
    "EqualityResult",
    "EqualityTest",
    "ProbeShift",
    "equality_power",
    "equality_tests",
    "resample_check",
    "unrelated_pools",
]

Pools = Mapping[str, Sequence[str]]
Floats = npt.NDArray[np.float64]
_TOL = 1e-12  # a permuted statistic this close to the observed one counts as "as extreme"
_CELLS = 4_000_000  # permutations are processed in blocks of about this many matrix cells


@dataclass(frozen=True, slots=True)
class ProbeShift:
    """One probe's part of a test: its own statistic (MMD: the probe's unbiased MMD^2; rank:
    the candidate's rank sum minus its null mean, divided by ``N + 1``), its permutation
    p-value and the Holm-adjusted one (over the probes tested)."""

    probe: str
    statistic: float
    p_value: float
    p_adjusted: float
    n_reference: int
    n_candidate: int


@dataclass(frozen=True, slots=True)
class EqualityTest:
    """One test over all probes: the statistic, its stratified-permutation p-value
    (``(1 + #{permuted >= observed}) / (1 + permutations)``) and the probes' parts."""

    test: str
    statistic: float
    p_value: float
    permutations: int
    probes: tuple[ProbeShift, ...]

    @property
    def n_probes(self) -> int:
        return len(self.probes)


@dataclass(frozen=True, slots=True)
class EqualityResult:
    """Both tests and the decision: ``p_value`` is the Holm-adjusted smaller of the two
    (twice the smaller, at most 1), so "changed" (``p_value <= alpha``) has a false-alarm rate
    of at most ``alpha`` whichever test fires. ``moved`` lists the probes whose MMD part is
    significant after Holm over probes, most moved first."""

    mmd: EqualityTest
    rank: EqualityTest
    p_value: float
    alpha: float

    @property
    def changed(self) -> bool:
        return self.p_value <= self.alpha

    @property
    def moved(self) -> tuple[str, ...]:
        """Probes whose MMD part is significant after Holm over the probes, most moved first.
        (With ``P`` probes a permutation p-value needs at least ``P / alpha`` permutations to
        survive Holm at all: 2000 for 40 probes at 0.05 leaves room.)"""
        ranked = sorted(
            (p.p_adjusted, p.probe) for p in self.mmd.probes if p.p_adjusted <= self.alpha
        )
        return tuple(name for _, name in ranked)


@dataclass(frozen=True, slots=True)
class _Stratum:
    name: str
    n: int  # reference completions
    m: int  # candidate completions
    kernel: Floats  # (n + m) x (n + m), reference first


def _strata(reference: Pools, candidate: Pools, length: int) -> list[_Stratum]:
    out = []
    for name in reference:
        ref, cand = list(reference[name]), list(candidate.get(name, ()))
        if len(ref) < 2 or len(cand) < 2:
            continue  # the unbiased MMD needs two completions on each side
        codes = hamming_codes([*ref, *cand], length)
        out.append(_Stratum(name, len(ref), len(cand), _kernel(codes)))
    return out


def _kernel(codes: npt.NDArray[np.int32]) -> Floats:
    """:func:`hamming_kernel` of ``codes`` with themselves; small sets in one comparison."""
    size, length = codes.shape
    if size * size * length > _CELLS:
        return hamming_kernel(codes, codes)
    same = codes[:, None, :] == codes[None, :, :]
    out: Floats = same.sum(axis=2) / length
    return out


def _stats(k: Floats, u: Floats, n: int, m: int) -> tuple[Floats, Floats]:
    """MMD^2 and the weighted, centred candidate rank sum of each labeling: ``k`` is a stack
    of kernels ``(P, N, N)`` of strata of one shape, ``u`` their labelings ``(P, B, N)`` (1 =
    reference); both results are ``(P, B)``."""
    from scipy.stats import rankdata  # scipy loads only when a test runs

    d = np.diagonal(k, axis1=1, axis2=2)[:, None, :]  # (P, 1, N)
    ku = u @ k  # (P, B, N): kernel of completion i with the reference-labelled ones
    cols = k.sum(axis=1)[:, None, :]
    v = 1.0 - u
    xx = (u * ku).sum(axis=2) - (u * d).sum(axis=2)
    xy = (u * (cols - ku)).sum(axis=2)
    yy = (v * (cols - ku)).sum(axis=2) - (v * d).sum(axis=2)
    mmd = xx / (n * (n - 1)) + yy / (m * (m - 1)) - 2.0 * xy / (n * m)
    score = (ku - u * d) / (n - u)  # mean similarity to the *other* reference completions
    ranks = rankdata(score, axis=2)
    total = n + m
    rank = ((v * ranks).sum(axis=2) - m * (total + 1) / 2.0) / (total + 1)
    return mmd, rank


def _permute(
    strata: Sequence[_Stratum], permutations: int, rng: np.random.Generator
) -> tuple[Floats, Floats]:
    """Per stratum (rows) the observed (column 0) and permuted statistics: MMD and rank.
    Strata of one shape ``(n, m)`` are computed together, as one stack."""
    mmd = np.empty((len(strata), permutations + 1))
    rank = np.empty((len(strata), permutations + 1))
    shapes: dict[tuple[int, int], list[int]] = {}
    for j, s in enumerate(strata):
        shapes.setdefault((s.n, s.m), []).append(j)
    for (n, m), members in shapes.items():
        size = n + m
        k = np.stack([strata[j].kernel for j in members])
        base = np.zeros(size)
        base[:n] = 1.0
        block = max(1, _CELLS // (size * size * len(members)))
        observed = np.broadcast_to(base, (len(members), 1, size)).copy()
        mmd[members, :1], rank[members, :1] = _stats(k, observed, n, m)
        for start in range(0, permutations, block):
            count = min(block, permutations - start)
            u = rng.permuted(np.broadcast_to(base, (len(members), count, size)), axis=2)
            cols = slice(1 + start, 1 + start + count)
            mmd[members, cols], rank[members, cols] = _stats(k, u, n, m)
    return mmd, rank


def _p(null: Floats, observed: float) -> float:
    return float((1 + np.count_nonzero(null >= observed - _TOL)) / (1 + null.size))


def _test(name: str, strata: Sequence[_Stratum], table: Floats, two_sided: bool) -> EqualityTest:
    """``table``: per stratum (rows), the observed (column 0) and permuted statistics. MMD
    (one sided) averages the probes; rank (two sided) sums the weighted rank sums."""
    total = table.sum(axis=0) if two_sided else table.mean(axis=0)
    extreme = np.abs if two_sided else np.asarray
    per_probe = extreme(table)
    p_probe = [_p(row[1:], float(row[0])) for row in per_probe]
    adjusted = adjust(p_probe, "holm")
    probes = tuple(
        ProbeShift(s.name, float(table[j, 0]), p_probe[j], adjusted[j], s.n, s.m)
        for j, s in enumerate(strata)
    )
    overall = extreme(total)
    return EqualityTest(
        name, float(total[0]), _p(overall[1:], float(overall[0])), table.shape[1] - 1, probes
    )


def equality_tests(
    reference: Pools,
    candidate: Pools,
    *,
    rng: np.random.Generator,
    permutations: int = 1000,
    alpha: float = 0.05,
    length: int = 100,
) -> EqualityResult:
    """The MMD and rank tests of ``candidate`` against ``reference`` (completions per probe),
    from one set of stratified permutations, and the decision at ``alpha`` (see the module
    docstring). Probes with fewer than two completions on a side are left out; with no probe
    left, both p-values are NaN and nothing is decided. ``length``: characters the kernel
    reads."""
    if permutations < 1:
        raise ValueError(f"permutations must be positive, got {permutations}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    strata = _strata(reference, candidate, length)
    if not strata:
        nan = math.nan
        empty_mmd = EqualityTest("mmd-hamming", nan, nan, permutations, ())
        empty_rank = EqualityTest("rank-van-elteren", nan, nan, permutations, ())
        return EqualityResult(empty_mmd, empty_rank, nan, alpha)
    mmd_table, rank_table = _permute(strata, permutations, rng)
    mmd = _test("mmd-hamming", strata, mmd_table, two_sided=False)
    rank = _test("rank-van-elteren", strata, rank_table, two_sided=True)
    return EqualityResult(mmd, rank, min(1.0, 2 * min(mmd.p_value, rank.p_value)), alpha)


def unrelated_pools(pools: Pools) -> dict[str, tuple[str, ...]]:
    """Each probe's completions replaced by the next probe's (in order, the last by the
    first): what a model that answers every probe with unrelated text would give. A yardstick
    for "a different model", used by :func:`resample_check` as the other pool."""
    names = list(pools)
    return {a: tuple(pools[b]) for a, b in zip(names, names[1:] + names[:1], strict=True)}


def resample_check(
    pool: Pools,
    n: int,
    rng: np.random.Generator,
    *,
    other: Pools | None = None,
    epsilon: float = 1.0,
    replace: bool = False,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """One resampled check with ``n`` completions per probe on each side: the reference side
    from ``pool``; the candidate side from ``other`` with probability ``epsilon`` per
    completion, else from ``pool`` (``other=None``: all from ``pool``, a same-vs-same check).
    Without ``replace`` the two sides never share a completion of ``pool`` (it needs ``2n``
    completions per probe when ``other`` is None, ``n`` plus the mixture's share otherwise),
    so a same-vs-same check is a random split; with ``replace`` both draw with replacement (a
    bootstrap, for budgets larger than the pools)."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be between 0 and 1, got {epsilon}")
    ref: dict[str, list[str]] = {}
    cand: dict[str, list[str]] = {}
    for name, texts in pool.items():
        foreign = list(other[name]) if other is not None else []
        k = int(rng.binomial(n, epsilon)) if other is not None else 0
        if k and not foreign:
            raise ValueError(f"no completions of probe {name!r} in the other pool")
        own = n + (n - k)
        if not replace and (len(texts) < own or len(foreign) < k):
            raise ValueError(
                f"probe {name!r}: {len(texts)} and {len(foreign)} completions cannot give "
                f"{own} and {k} without replacement"
            )
        mine = _draw(texts, own, rng, replace)
        drawn = _draw(foreign, k, rng, replace) if k else []
        ref[name] = mine[:n]
        cand[name] = [*mine[n:], *drawn]
    return ref, cand


def _draw(texts: Sequence[str], k: int, rng: np.random.Generator, replace: bool) -> list[str]:
    idx = rng.choice(len(texts), size=k, replace=replace)
    return [texts[int(i)] for i in idx]


def equality_power(
    draw: Callable[[np.random.Generator], tuple[Pools, Pools]],
    *,
    rng: np.random.Generator,
    repetitions: int = 100,
    permutations: int = 200,
    alpha: float = 0.05,
    length: int = 100,
) -> Estimate:
    """The share of ``repetitions`` resampled checks (``draw(rng) -> (reference, candidate)``,
    e.g. a :func:`resample_check`) that :func:`equality_tests` calls changed at ``alpha``,
    with a Wilson interval (method ``"wilson"``, ``n`` = repetitions). Under a same-vs-same
    ``draw`` it estimates the false-alarm rate, under a planted change the power."""
    if repetitions < 1:
        raise ValueError(f"repetitions must be positive, got {repetitions}")
    hits = 0
    for _ in range(repetitions):
        ref, cand = draw(rng)
        result = equality_tests(
            ref, cand, rng=rng, permutations=permutations, alpha=alpha, length=length
        )
        hits += bool(result.changed)
    return wilson(hits, repetitions)

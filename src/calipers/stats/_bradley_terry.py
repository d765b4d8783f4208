"""Bradley-Terry ratings from pairwise preferences, with ties by Davidson's (1970) model.

For models i and j with strengths ``pi = exp(theta)`` and tie parameter ``nu``::

    P(i beats j) = pi_i / D,  P(j beats i) = pi_j / D,  P(tie) = nu * sqrt(pi_i * pi_j) / D,
    D = pi_i + pi_j + nu * sqrt(pi_i * pi_j)

With no tie in the data ``nu`` is 0 and this is plain Bradley-Terry. Battles are aggregated
into win/loss/tie counts per pair; ``(theta, log nu)`` is fitted by Newton's method on the
concave log-likelihood (analytic gradient and Hessian, backtracking steps), for the point
estimate and for all bootstrap resamples at once. Log-strengths sum to zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from calipers.stats._proportion import check_confidence, wilson
from calipers.stats._ranking import _rank_bounds, _rank_intervals
from calipers.types import Estimate

__all__ = ["BradleyTerry", "PairRecord", "RatedModel", "bradley_terry"]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ELO_SCALE = 400.0 / math.log(10.0)  # Elo points per unit of log-strength
ELO_BASE = 1000.0  # the Elo rating of a model of average (geometric mean) strength
_CHUNK = 250  # bootstrap resamples fitted together (memory ~ CHUNK x pairs x 20 floats)
_MAX_ITER = 100
_TOL = 1e-10  # Newton stops when no parameter moves by more than this
_DAMPING = 1e-6


@dataclass(frozen=True, slots=True)
class RatedModel:
    """One model's rating; ranks count from 1 = strongest.

    ``log_strength`` is theta (the log-strengths sum to zero over the models) and ``elo`` is
    ``1000 + 400 / ln 10 * theta``, with percentile bootstrap intervals. ``unbounded`` is True
    when the model never lost (or never won) and never tied: its maximum-likelihood rating is
    infinite and the number shown is set by the prior.
    """

    name: str
    log_strength: Estimate
    elo: Estimate
    rank: int
    rank_low: int
    rank_high: int
    wins: int
    losses: int
    ties: int
    unbounded: bool

    @property
    def n(self) -> int:
        return self.wins + self.losses + self.ties


@dataclass(frozen=True, slots=True)
class PairRecord:
    """Counts for one pair; ``win_rate`` is ``model_a``'s share of the decisive battles."""

    model_a: str
    model_b: str
    wins_a: int
    wins_b: int
    ties: int
    win_rate: Estimate
    tie_rate: Estimate


@dataclass(frozen=True, slots=True)
class BradleyTerry:
    """Fitted ratings (strongest first), the tie parameter, pair records and how it was done."""

    models: tuple[RatedModel, ...]
    tie: Estimate
    pairs: tuple[PairRecord, ...]
    n: int
    n_resamples: int
    prior: float
    mle_exists: bool
    method: str
    note: str | None


@dataclass(frozen=True, slots=True)
class _Counts:
    names: list[str]
    i: IntArray  # first model of each compared pair (i < j)
    j: IntArray
    cells: IntArray  # (pairs, 3): i wins, j wins, ties

    @property
    def with_ties(self) -> bool:
        return bool(self.cells[:, 2].sum() > 0)

    @property
    def incidence(self) -> tuple[Array, Array]:
        """(pairs, models) indicators of each pair's first and of its second model."""
        k, rows = len(self.names), np.arange(self.i.size)
        ai, aj = np.zeros((self.i.size, k)), np.zeros((self.j.size, k))
        ai[rows, self.i] = 1.0
        aj[rows, self.j] = 1.0
        return ai, aj


_OUTCOMES = {"a": 0, "b": 1, "tie": 2}


def _add(table: dict[tuple[str, str], list[int]], a: str, b: str, w: Iterable[int]) -> None:
    if a == b:
        raise ValueError(f"a model cannot battle itself ({a!r})")
    wa, wb, t = (int(x) for x in w)
    if min(wa, wb, t) < 0:
        raise ValueError(f"negative count for ({a!r}, {b!r})")
    key, row = ((a, b), (wa, wb, t)) if a < b else ((b, a), (wb, wa, t))
    cell = table.setdefault(key, [0, 0, 0])
    for k in range(3):
        cell[k] += row[k]


def _aggregate(
    battles: Iterable[tuple[str, str, str]] | Mapping[tuple[str, str], tuple[int, int, int]],
) -> _Counts:
    table: dict[tuple[str, str], list[int]] = {}
    if isinstance(battles, Mapping):
        for (a, b), w in battles.items():
            _add(table, str(a), str(b), w)
    else:
        for a, b, outcome in battles:
            if outcome not in _OUTCOMES:
                raise ValueError(f"outcome must be 'a', 'b' or 'tie', got {outcome!r}")
            row = [0, 0, 0]
            row[_OUTCOMES[outcome]] = 1
            _add(table, str(a), str(b), row)
    table = {k: v for k, v in table.items() if sum(v) > 0}
    names = sorted({m for pair in table for m in pair})
    if len(names) < 2:
        raise ValueError("Bradley-Terry needs battles between at least two models")
    index = {m: k for k, m in enumerate(names)}
    keys = sorted(table)
    i = np.array([index[a] for a, _ in keys], dtype=np.int64)
    j = np.array([index[b] for _, b in keys], dtype=np.int64)
    cells = np.array([table[k] for k in keys], dtype=np.int64).reshape(-1, 3)
    return _Counts(names, i, j, cells)


def _components(c: _Counts, strong: bool) -> list[list[str]]:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    k = len(c.names)
    if strong:  # an edge loser -> winner; a tie links both ways
        beats_j, beats_i = c.cells[:, 0] + c.cells[:, 2] > 0, c.cells[:, 1] + c.cells[:, 2] > 0
        src = np.concatenate([c.j[beats_j], c.i[beats_i]])
        dst = np.concatenate([c.i[beats_j], c.j[beats_i]])
    else:
        src, dst = c.i, c.j
    graph = coo_matrix((np.ones(src.size), (src, dst)), shape=(k, k))
    _, labels = connected_components(graph, directed=strong, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, label in zip(c.names, labels, strict=True):
        groups.setdefault(int(label), []).append(name)
    return sorted(groups.values(), key=lambda g: (-len(g), g))


Probs = tuple[Array, Array, Array]


def _evaluate(x: Array, w: Array, c: _Counts, prior: float) -> tuple[Array, Probs]:
    """Per row of ``x``: the log-likelihood minus the ridge prior and the centring term (zero
    at the optimum), and per pair P(i wins), P(j wins), P(tie)."""
    k = len(c.names)
    a, b = x[:, c.i], x[:, c.j]
    t = x[:, k : k + 1] + (a + b) / 2 if c.with_ties else np.full_like(a, -np.inf)
    m = np.maximum(np.maximum(a, b), t)
    ea, eb, et = np.exp(a - m), np.exp(b - m), np.exp(t - m)
    s = ea + eb + et
    ll = w[..., 0] * a + w[..., 1] * b - w.sum(axis=-1) * (m + np.log(s))
    if c.with_ties:
        ll += w[..., 2] * t
    penalty = 0.5 * prior * (x**2).sum(axis=1) + 0.5 * x[:, :k].sum(axis=1) ** 2 / k
    return ll.sum(axis=1) - penalty, (ea / s, eb / s, et / s)


def _newton_step(x: Array, p: Probs, w: Array, c: _Counts, prior: float) -> Array:
    """The Newton step ``-H^-1 g`` of the objective for each row of ``x``."""
    k, rows, nv = len(c.names), x.shape[0], x.shape[1]
    pa, pb, pt = p
    n = w.sum(axis=-1)
    ga, gb, gt = w[..., 0] - n * pa, w[..., 1] - n * pb, w[..., 2] - n * pt
    # Hessian of -n * logsumexp(a, b, t) in (a, b, t), then t = delta + (a + b) / 2.
    haa, hbb, htt = -n * pa * (1 - pa), -n * pb * (1 - pb), -n * pt * (1 - pt)
    hab, hat, hbt = n * pa * pb, n * pa * pt, n * pb * pt
    ai, aj = c.incidence
    g = np.zeros((rows, nv))
    g[:, :k] = (ga + gt / 2) @ ai + (gb + gt / 2) @ aj
    h = np.zeros((rows, nv, nv))
    diag = np.arange(k)
    h[:, diag, diag] = (haa + hat + htt / 4) @ ai + (hbb + hbt + htt / 4) @ aj
    hij = hab + hat / 2 + hbt / 2 + htt / 4
    h[:, c.i, c.j] = hij
    h[:, c.j, c.i] = hij
    if c.with_ties:
        g[:, k] = gt.sum(axis=1)
        h[:, k, :k] = (hat + htt / 2) @ ai + (hbt + htt / 2) @ aj
        h[:, :k, k] = h[:, k, :k]
        h[:, k, k] = htt.sum(axis=1)
    g -= prior * x
    g[:, :k] -= x[:, :k].sum(axis=1, keepdims=True) / k
    # The damping keeps the step finite where a resample's likelihood is flat (e.g. no ties
    # left, so nu -> 0); it does not move the optimum, where g = 0.
    h -= (prior + _DAMPING) * np.eye(nv)
    h[:, :k, :k] -= 1.0 / k
    step = -np.linalg.solve(h, g[..., None])[..., 0]
    return np.where(np.isfinite(step), step, 0.0)


def _fit(x0: Array, w: Array, c: _Counts, prior: float) -> tuple[Array, bool]:
    """Maximise the objective from ``x0`` (rows fitted independently); True if converged."""
    x = x0.copy()
    f, p = _evaluate(x, w, c, prior)
    for _ in range(_MAX_ITER):
        step = _newton_step(x, p, w, c, prior)
        scale = np.ones((x.shape[0], 1))
        for _ in range(40):  # backtrack where the full step does not improve the objective
            f_new, p = _evaluate(x + scale * step, w, c, prior)
            worse = ~(f_new >= f - 1e-12 * np.abs(f))
            if not worse.any():
                break
            scale[worse] /= 2
        x, f = x + scale * step, f_new
        if float(np.max(np.abs(scale * step))) < _TOL:
            return x, True
    return x, False


def _start(c: _Counts) -> Array:
    k = len(c.names)
    if not c.with_ties:
        return np.zeros((1, k))
    ties, total = c.cells[:, 2].sum(), c.cells.sum()
    nu = 2.0 * ties / max(total - ties, 1)  # P(tie) = nu / (2 + nu) at equal strengths
    return np.concatenate([np.zeros(k), [math.log(nu)]])[None, :]


def _bootstrap(
    x_hat: Array, c: _Counts, prior: float, rng: np.random.Generator, n_resamples: int
) -> Array:
    """Battles resampled with replacement: multinomial draws over the (pair, outcome) cells."""
    flat = c.cells.reshape(-1)
    total = int(flat.sum())
    out = np.empty((n_resamples, x_hat.size))
    for start in range(0, n_resamples, _CHUNK):
        rows = min(_CHUNK, n_resamples - start)
        w = rng.multinomial(total, flat / total, size=rows).reshape(rows, -1, 3).astype(float)
        out[start : start + rows], _ = _fit(np.repeat(x_hat, rows, axis=0), w, c, prior)
    return out


def _percentile(value: float, draws: Array, n: int, c: float, method: str) -> Estimate:
    lo, hi = np.quantile(draws, [(1 - c) / 2, (1 + c) / 2])
    return Estimate(value, min(float(lo), value), max(float(hi), value), n, method, c)


def _check(c: _Counts, prior: float) -> tuple[bool, str | None]:
    weak = _components(c, strong=False)
    if len(weak) > 1:
        listed = "; ".join("{" + ", ".join(g) + "}" for g in weak)
        raise ValueError(
            f"the comparison graph is disconnected: no battle links these groups of models: "
            f"{listed}; ratings across groups are not comparable, fit each group apart"
        )
    if c.cells[:, 2].sum() == c.cells.sum():
        raise ValueError("every battle is a tie: the tie parameter nu is unbounded")
    strong = _components(c, strong=True)
    if len(strong) == 1:
        return True, None
    listed = "; ".join("{" + ", ".join(g) + "}" for g in strong)
    if prior <= 0:
        raise ValueError(
            f"the maximum-likelihood ratings are infinite: some models never lost (or never "
            f"won) against the others (groups {listed}); pass prior > 0 to regularise"
        )
    return False, (
        f"no finite maximum-likelihood fit (groups that never beat each other: {listed}); "
        f"the ratings between these groups are set by the prior (precision {prior:g})"
    )


def _records(c: _Counts, conf: float) -> tuple[PairRecord, ...]:
    out = []
    for (i, j), (wa, wb, t) in zip(zip(c.i, c.j, strict=True), c.cells, strict=True):
        wa, wb, t = int(wa), int(wb), int(t)
        rate, tie = wilson(wa, wa + wb, conf), wilson(t, wa + wb + t, conf)
        out.append(PairRecord(c.names[i], c.names[j], wa, wb, t, rate, tie))
    return tuple(out)


def _tally(c: _Counts) -> IntArray:
    """(models, 3): wins, losses, ties of each model."""
    k = len(c.names)

    def per_model(first: IntArray, second: IntArray) -> IntArray:
        return np.bincount(c.i, first, k) + np.bincount(c.j, second, k)

    wins, losses, ties = c.cells[:, 0], c.cells[:, 1], c.cells[:, 2]
    out = np.stack([per_model(wins, losses), per_model(losses, wins), per_model(ties, ties)])
    return out.T.round().astype(np.int64)


def _rated(
    c: _Counts, x_hat: Array, draws: Array, tally: IntArray, conf: float
) -> list[RatedModel]:
    k = len(c.names)
    theta = x_hat[0, :k]
    tol = 1e-9 * max(1.0, float(np.max(np.abs(theta))))
    rank, _ = _rank_bounds(theta, tol)
    low, high = _rank_intervals(draws[:, :k], tol, conf)
    low, high = np.minimum(low, rank), np.maximum(high, rank)
    method = f"bootstrap over battles, {100 * conf:g}% percentile"
    rows = []
    for m in sorted(range(k), key=lambda m: (-theta[m], c.names[m])):
        wins, losses, ties = (int(v) for v in tally[m])
        n = wins + losses + ties
        est = _percentile(float(theta[m]), draws[:, m], n, conf, method)
        elo = Estimate(
            ELO_BASE + ELO_SCALE * est.value,
            ELO_BASE + ELO_SCALE * est.low,
            ELO_BASE + ELO_SCALE * est.high,
            n,
            method,
            conf,
        )
        unbounded = ties == 0 and (wins == 0 or losses == 0)
        rows.append(
            RatedModel(
                c.names[m],
                est,
                elo,
                int(rank[m]),
                int(low[m]),
                int(high[m]),
                wins,
                losses,
                ties,
                unbounded,
            )
        )
    return rows


def bradley_terry(
    battles: Iterable[tuple[str, str, str]] | Mapping[tuple[str, str], tuple[int, int, int]],
    *,
    rng: np.random.Generator,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    prior: float = 0.01,
) -> BradleyTerry:
    """Bradley-Terry ratings with Davidson ties, bootstrap intervals and rank intervals.

    ``battles`` is a sequence of ``(model_a, model_b, outcome)`` with outcome ``"a"``,
    ``"b"`` or ``"tie"``, or a mapping ``(model_a, model_b) -> (wins_a, wins_b, ties)``.
    Ratings maximise the Davidson likelihood plus a Gaussian prior N(0, 1/prior) on each
    log-strength and on log nu (``prior`` is its precision; the default 0.01 is a standard
    deviation of 10, about 4,300 Elo points, which moves a model with a few dozen battles
    by well under 1%). Why a prior: when a model never lost (or never won) and never tied, or
    more generally when some group of models never lost to the rest, the maximum-likelihood
    rating is infinite; and bootstrap resamples of sparse data hit that often. With the prior
    every fit is finite; such models are flagged ``unbounded``, ``mle_exists`` is False and
    ``note`` names the groups. ``prior=0`` gives the plain maximum-likelihood fit and raises
    ``ValueError`` where it does not exist. A disconnected comparison graph (groups with no
    battle between them) always raises ``ValueError`` naming the groups; so does data that
    is all ties. With no tie in the data, nu is 0 (plain Bradley-Terry).

    Intervals are percentile bootstrap intervals over battles: ``n_resamples`` multinomial
    draws of the battle count over the (pair, outcome) cells, which is resampling battles
    with replacement; ``rng`` draws them (``rng.multinomial``, in chunks of 250). Rank
    intervals are computed from the same resamples as ``rank_models`` computes them.
    Pair records hold Wilson intervals for the win rate over decisive battles and the tie rate.
    """
    conf = check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    if not prior >= 0:
        raise ValueError(f"prior must be >= 0, got {prior!r}")
    c = _aggregate(battles)
    mle_exists, note = _check(c, prior)
    x_hat, converged = _fit(_start(c), c.cells[None, :, :].astype(np.float64), c, prior)
    if not converged:
        raise ValueError("the Bradley-Terry fit did not converge; try a larger prior")
    draws = _bootstrap(x_hat, c, prior, rng, n_resamples)
    total = int(c.cells.sum())
    k = len(c.names)
    if c.with_ties:
        nu = float(np.exp(x_hat[0, k]))
        tie = _percentile(nu, np.exp(draws[:, k]), total, conf, "bootstrap over battles")
    else:
        tie = Estimate(0.0, 0.0, 0.0, total, "no ties observed", conf)
    models = _rated(c, x_hat, draws, _tally(c), conf)
    model = "Davidson ties" if c.with_ties else "no ties"
    method = f"Bradley-Terry ({model}), prior precision {prior:g}, {n_resamples} resamples"
    return BradleyTerry(
        tuple(models), tie, _records(c, conf), total, n_resamples, prior, mle_exists, method, note
    )

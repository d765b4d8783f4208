"""Which raters to trust: the Dawid-Skene rater-competence model, fitted by EM.

Each item has an unknown true class ``k`` drawn with probability ``prior[k]``; rater ``r``
labels an item of class ``k`` as ``l`` with probability ``confusion[r, k, l]``, independently
of the other raters. EM alternates the posterior of each item's class given the labels
(E-step) and the priors and confusion matrices given those posteriors (M-step). Dawid &
Skene (1979), "Maximum likelihood estimation of observer error-rates using the EM
algorithm", Applied Statistics 28:20-28.

The posterior is the weighted aggregate: a label from an accurate rater moves it more than
one from a rater near chance. Not every rater has to label every item, and a rater may
label an item more than once (each label counts as an observation).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import logsumexp

__all__ = ["DawidSkene", "dawid_skene"]

Floats = npt.NDArray[np.float64]
Ints = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class DawidSkene:
    """A fitted Dawid-Skene model.

    ``posterior[i, k]``: probability that item ``items[i]`` is of class ``classes[k]``;
    ``labels[i]``: its most probable class (the first on a tie). ``confusion[r, k, l]``:
    probability that rater ``raters[r]`` answers ``classes[l]`` on an item of class
    ``classes[k]`` (rows sum to 1). ``accuracy[r] = sum_k prior[k] confusion[r, k, k]``:
    the chance the rater is right on an item drawn like these. ``log_likelihood``: of the
    labels under the fitted model, classes summed out (without the smoothing prior).
    ``converged``: the log-likelihood changed by less than ``tol`` before ``max_iter``.
    """

    classes: tuple[Hashable, ...]
    raters: tuple[Hashable, ...]
    items: tuple[Hashable, ...]
    posterior: Floats
    labels: tuple[Hashable, ...]
    confusion: Floats
    accuracy: Floats
    prior: Floats
    iterations: int
    log_likelihood: float
    converged: bool


@dataclass(frozen=True, slots=True)
class _Coded:
    item: Ints  # (M,) item index of each label
    rater: Ints  # (M,) rater index
    label: Ints  # (M,) class index
    shape: tuple[int, int, int]  # items, raters, classes


def _index(
    values: Sequence[Hashable], order: Sequence[Hashable] | None
) -> tuple[list[Hashable], Ints]:
    """The distinct values (``order`` if given, else sorted when possible) and each one's code."""
    if order is None:
        seen = list(dict.fromkeys(values))
        try:
            order = sorted(seen)  # type: ignore[type-var]
        except TypeError:
            order = seen
    index = {v: i for i, v in enumerate(order)}
    if len(index) != len(order):
        raise ValueError(f"the given order has repeated values: {list(order)}")
    codes = np.empty(len(values), dtype=np.intp)
    for j, v in enumerate(values):
        if v not in index:
            raise ValueError(f"label {v!r} at position {j} is not one of the classes {list(order)}")
        codes[j] = index[v]
    return list(order), codes


def _e_step(c: _Coded, log_prior: Floats, log_conf: Floats) -> tuple[Floats, float]:
    """Posterior over classes of each item, and the log-likelihood of all labels."""
    joint = np.tile(log_prior, (c.shape[0], 1))
    np.add.at(joint, c.item, log_conf[c.rater, :, c.label])
    norm = logsumexp(joint, axis=1)
    return np.exp(joint - norm[:, None]), float(norm.sum())


def _m_step(c: _Coded, post: Floats, smoothing: float) -> tuple[Floats, Floats]:
    """Smoothed class priors and confusion matrices given the item posteriors.

    A Dirichlet pseudo-count ``smoothing`` in every cell (MAP estimate), so a cell never
    seen is small but not zero and one odd label cannot give a log-likelihood of -inf.
    """
    _, r, k = c.shape
    prior = post.sum(axis=0) + smoothing
    counts = np.empty((r, k, k))
    cell = c.rater * k + c.label
    for true in range(k):
        counts[:, true, :] = np.bincount(cell, weights=post[c.item, true], minlength=r * k).reshape(
            r, k
        )
    counts += smoothing
    rows = counts.sum(axis=2, keepdims=True)  # 0 only without smoothing: no evidence, uniform
    conf = np.divide(counts, rows, out=np.full_like(counts, 1.0 / k), where=rows > 0)
    return prior / prior.sum(), conf


def _majority(c: _Coded) -> Floats:
    """Each item's share of labels per class: the soft majority vote EM starts from."""
    n, _, k = c.shape
    votes = np.bincount(c.item * k + c.label, minlength=n * k).reshape(n, k).astype(np.float64)
    shares: Floats = votes / votes.sum(axis=1, keepdims=True)
    return shares


def _code(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    labels: Sequence[Hashable],
    classes: Sequence[Hashable] | None,
) -> tuple[_Coded, list[Hashable], list[Hashable], list[Hashable]]:
    if not len(items) == len(raters) == len(labels):
        raise ValueError(
            f"got {len(items)} items, {len(raters)} raters and {len(labels)} labels; "
            "pass one (item, rater, label) triple per judgment"
        )
    item_names, item = _index(list(items), list(dict.fromkeys(items)))
    rater_names, rater = _index(list(raters), list(dict.fromkeys(raters)))
    class_names, label = _index(list(labels), classes)
    shape = (len(item_names), len(rater_names), len(class_names))
    return _Coded(item, rater, label, shape), item_names, rater_names, class_names


def dawid_skene(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    labels: Sequence[Hashable],
    *,
    classes: Sequence[Hashable] | None = None,
    smoothing: float = 0.01,
    tol: float = 1e-6,
    max_iter: int = 500,
) -> DawidSkene:
    """Fit Dawid-Skene by EM to judgments given as triples ``(items[j], raters[j], labels[j])``.

    ``classes`` fixes the class order (and may include classes nobody used); by default the
    labels seen, sorted. EM starts from the soft majority vote (each item's share of labels
    per class, as Dawid & Skene did); one iteration is an M-step (priors and confusion
    matrices, with ``smoothing`` pseudo-counts in every cell) then an E-step (posteriors).
    It stops once the log-likelihood changes by less than ``tol`` or after ``max_iter``
    iterations (``converged`` says which). ``smoothing=0`` is plain maximum likelihood: a
    confusion row with no weight is then uniform, and an item whose labels are impossible
    under the fit gets a NaN posterior. EM finds a local maximum; starting from the
    majority vote assumes raters are, on the whole, better than chance.
    """
    if smoothing < 0 or not math.isfinite(smoothing):
        raise ValueError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
    if max_iter < 1:
        raise ValueError(f"max_iter must be at least 1, got {max_iter!r}")
    coded, item_names, rater_names, class_names = _code(items, raters, labels, classes)
    if coded.item.size == 0:
        raise ValueError("no judgments: dawid_skene needs at least one (item, rater, label)")
    post, ll, converged, it = _majority(coded), -math.inf, False, 0
    while it < max_iter and not converged:
        it += 1
        prior, conf = _m_step(coded, post, smoothing)
        with np.errstate(divide="ignore"):  # zero cells only when smoothing == 0
            post, new = _e_step(coded, np.log(prior), np.log(conf))
        converged, ll = abs(new - ll) < tol, new
    accuracy = np.einsum("k,rkk->r", prior, conf)
    best = post.argmax(axis=1)
    return DawidSkene(
        classes=tuple(class_names),
        raters=tuple(rater_names),
        items=tuple(item_names),
        posterior=post,
        labels=tuple(class_names[b] for b in best),
        confusion=conf,
        accuracy=accuracy,
        prior=prior,
        iterations=it,
        log_likelihood=ll,
        converged=converged,
    )

"""Recent traffic that nothing covers yet: outliers and new clusters.

A recent prompt is *covered* by its most similar text (cosine of the vectors of
:mod:`calipers.monitor._vectors`) among the reference traffic and the items of the given
suites. The reference calibrates how close "covered" is: each reference prompt's similarity to
its nearest neighbour among the *other* reference prompts and the suite items is a draw of what
ordinary traffic scores. A recent prompt's conformal p-value is
``(1 + #{reference scores <= its score}) / (m + 1)``; it is an **outlier** when that is at most
``quantile`` (default 0.01). If the recent traffic is like the reference, about ``quantile`` of
it is flagged (a little less: the reference's own scores are leave-one-out, which makes the
test conservative); ``threshold`` is the similarity below which a prompt is flagged.

Outliers more alike than ordinary traffic form groups (average-linkage clustering: the mean
similarity within a group is at least ``link_similarity``, the 75th percentile of the
similarities of pairs of reference prompts); a group of at least ``min_cluster`` is a **new
cluster**: a kind of request the reference and the suites do not have.

``suite_uncovered`` is the share of recent prompts whose nearest suite item is below the
threshold (Wilson): how much of today's traffic the suites miss, outliers or not.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from calipers.monitor._traffic import Exchange
from calipers.monitor._vectors import Embedder
from calipers.stats import wilson
from calipers.types import Estimate

__all__ = ["NewCluster", "Novelty", "NoveltyItem", "find_novelty"]

Floats = npt.NDArray[np.float64]
_BLOCK = 512
LINK_QUANTILE = 0.75
_WORD = re.compile(r"(?u)\b[^\W\d_]{3,}\b")


@dataclass(frozen=True)
class NoveltyItem:
    """One flagged recent request; ``exchange`` keeps both arms' responses for review."""

    exchange: Exchange
    similarity: float
    p_value: float
    suite_similarity: float
    cluster: int | None = None

    @property
    def reason(self) -> str:
        where = "a new cluster" if self.cluster is not None else "an outlier"
        return (
            f"{where}: nearest reference/suite similarity {self.similarity:.3f}, "
            f"conformal p = {self.p_value:.4f}"
        )

    def to_dict(self) -> dict[str, Any]:
        ex = self.exchange
        return {
            "pair_id": ex.pair_id,
            "ts": ex.ts.isoformat(),
            "prompt": ex.prompt,
            "similarity": _f(self.similarity),
            "p_value": self.p_value,
            "suite_similarity": _f(self.suite_similarity),
            "cluster": self.cluster,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class NewCluster:
    id: int
    size: int
    name: str
    examples: list[str]
    suite_similarity: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "size": self.size,
            "name": self.name,
            "examples": self.examples,
            "suite_similarity": _f(self.suite_similarity),
        }


@dataclass(frozen=True)
class Novelty:
    embeddings: str
    quantile: float
    threshold: float
    link_similarity: float
    n_reference: int
    n_recent: int
    n_suite_items: int
    suites: list[str]
    outliers: list[NoveltyItem]
    clusters: list[NewCluster]
    suite_uncovered: Estimate
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "embeddings": self.embeddings,
            "quantile": self.quantile,
            "threshold": _f(self.threshold),
            "link_similarity": _f(self.link_similarity),
            "n_reference": self.n_reference,
            "n_recent": self.n_recent,
            "n_suite_items": self.n_suite_items,
            "suites": self.suites,
            "n_outliers": len(self.outliers),
            "outliers": [o.to_dict() for o in self.outliers],
            "new_clusters": [c.to_dict() for c in self.clusters],
            "suite_uncovered": {
                k: _f(v) if isinstance(v, float) else v
                for k, v in self.suite_uncovered.to_dict().items()
            },
            "notes": self.notes,
        }


def _f(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _max_sim(a: Any, b: Any, *, skip_self: bool = False) -> Floats:
    """For each row of ``a`` the largest dot product with a row of ``b`` (``skip_self``:
    ``a`` is ``b`` and a row is not its own neighbour); -inf when ``b`` is empty."""
    n = a.shape[0]
    out = np.full(n, -np.inf)
    if b.shape[0] == 0 or n == 0:
        return out
    for s in range(0, n, _BLOCK):
        block = a[s : s + _BLOCK] @ b.T
        block = np.asarray(block.toarray() if hasattr(block, "toarray") else block, dtype=float)
        if skip_self:
            idx = np.arange(block.shape[0])
            block[idx, s + idx] = -np.inf
        out[s : s + _BLOCK] = block.max(axis=1)
    return out


def _pair_quantile(x: Any, q: float, rng: np.random.Generator, max_n: int = 500) -> float:
    """The ``q`` quantile of the similarities of pairs of distinct rows (a sample of rows)."""
    idx = rng.choice(x.shape[0], min(max_n, x.shape[0]), replace=False)
    sims = _dense(x[np.sort(idx)] @ x[np.sort(idx)].T)
    return float(np.quantile(sims[np.triu_indices(sims.shape[0], k=1)], q))


def _name(texts: Sequence[str]) -> str:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    df = Counter(
        w
        for t in texts
        for w in {x.lower() for x in _WORD.findall(t)}
        if w not in ENGLISH_STOP_WORDS
    )
    top = sorted(df.items(), key=lambda wc: (-wc[1], wc[0]))[:3]  # ties: alphabetical
    return " / ".join(w for w, _c in top) or "(no words)"


def _group(x: Floats, link: float, min_cluster: int) -> list[int | None]:
    """Average-linkage groups of rows whose mean similarity is at least ``link``; groups
    smaller than ``min_cluster`` are None."""
    keep = np.flatnonzero(np.linalg.norm(x, axis=1) > 0)  # a text without words has no angle
    if keep.size < max(2, min_cluster):
        return [None] * x.shape[0]
    from sklearn.cluster import AgglomerativeClustering

    found = AgglomerativeClustering(
        n_clusters=None,
        metric="cosine",
        linkage="average",
        distance_threshold=max(1e-9, 1.0 - link),
    ).fit_predict(x[keep])
    labels = np.full(x.shape[0], -1)
    labels[keep] = found
    sizes = Counter(lab for lab in labels.tolist() if lab >= 0)
    big = sorted(
        (lab for lab, c in sizes.items() if c >= min_cluster), key=lambda lab: (-sizes[lab], lab)
    )
    renum = {lab: i for i, lab in enumerate(big)}
    return [renum.get(lab) for lab in labels.tolist()]


def _dense(x: Any) -> Floats:
    return np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64)


def _sample(items: Sequence[Exchange], max_n: int, rng: np.random.Generator) -> list[Exchange]:
    if len(items) <= max_n:
        return list(items)
    return [items[i] for i in sorted(rng.choice(len(items), max_n, replace=False))]


def find_novelty(
    reference: Sequence[Exchange],
    recent: Sequence[Exchange],
    suite_texts: Sequence[str],
    *,
    embedder: Embedder,
    rng: np.random.Generator,
    suites: Sequence[str] = (),
    quantile: float = 0.01,
    min_cluster: int = 3,
    max_reference: int = 3000,
    max_examples: int = 3,
) -> Novelty:
    """Outliers and new clusters of ``recent`` against ``reference`` and ``suite_texts``."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    ref = _sample(reference, max_reference, rng)
    texts = [e.prompt for e in ref] + list(suite_texts) + [e.prompt for e in recent]
    m, k = len(ref), len(suite_texts)
    notes: list[str] = []
    x = embedder.unit(texts) if texts else None
    if x is None or m < 2 or not recent:
        notes.append(f"nothing to compare: {m} reference and {len(recent)} recent prompts")
        return Novelty(
            embedder.name,
            quantile,
            math.nan,
            math.nan,
            m,
            len(recent),
            k,
            list(suites),
            [],
            [],
            Estimate.empty("wilson"),
            notes,
        )
    xr, xs, xn = x[:m], x[m : m + k], x[m + k :]
    ref_score = np.maximum(_max_sim(xr, xr, skip_self=True), _max_sim(xr, xs))
    suite_sim = _max_sim(xn, xs)
    score = np.maximum(_max_sim(xn, xr), suite_sim)
    order = np.sort(ref_score)
    p = (1 + np.searchsorted(order, score, side="right")) / (m + 1)
    cut = math.floor(quantile * (m + 1)) - 1  # flagged iff fewer than cut+1 scores <= its own
    threshold = float(order[cut]) if cut >= 0 else -math.inf
    if cut < 0:
        notes.append(
            f"a reference of {m} prompts cannot flag anything at quantile "
            f"{quantile:g}: it needs at least {math.ceil(1 / quantile) - 1} (use a longer "
            "--reference or a larger --outlier-quantile)"
        )
    link = _pair_quantile(xr, LINK_QUANTILE, rng)
    flagged = np.flatnonzero(p <= quantile)
    groups = _group(_dense(xn[flagged]), link, min_cluster) if flagged.size else []
    items = [
        NoveltyItem(recent[i], float(score[i]), float(p[i]), float(suite_sim[i]), g)
        for i, g in zip(flagged.tolist(), groups, strict=True)
    ]
    clusters = []
    for c in sorted({g for g in groups if g is not None}):
        members = [it for it in items if it.cluster == c]
        prompts = [it.exchange.prompt for it in members]
        clusters.append(
            NewCluster(
                c,
                len(members),
                _name(prompts),
                prompts[:max_examples],
                max(it.suite_similarity for it in members),
            )
        )
    if k:
        uncovered = wilson(int(np.sum(suite_sim < threshold)), len(recent))
    else:
        uncovered = Estimate.empty("skipped: no suite given")
    items.sort(key=lambda it: (it.cluster is None, it.cluster or 0, it.similarity))
    return Novelty(
        embedder.name,
        quantile,
        threshold,
        link,
        m,
        len(recent),
        k,
        list(suites),
        items,
        clusters,
        uncovered,
        notes,
    )

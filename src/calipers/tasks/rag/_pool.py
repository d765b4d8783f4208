"""The passage pool of a RAG task: every passage of every item, deduplicated by id.

Distractors, filler and real retrievers all draw from it; the pool is every item the task
loads (not only the items of the run), so a short run draws from the same pool as a long one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from calipers.scorers import alias_in
from calipers.tasks.rag._item import Passage, answers_of, is_unanswerable, passages_of
from calipers.types import Sample

__all__ = ["Pool", "build_pool", "gold_passages", "mentions_answer", "own_ids", "shown_text"]


@dataclass(frozen=True)
class Pool:
    """The pool's passages (first occurrence of each id, in pool order, as the task gave them)
    and the questions and first answers of its items (counterfactual substitutes).
    ``digest`` identifies the pool's passages (the retrievers' index cache key)."""

    passages: tuple[Passage, ...]
    questions: tuple[str, ...]
    answers: tuple[str, ...]
    digest: str
    index_of: dict[str, int] = field(default_factory=dict, compare=False)


def build_pool(items: Sequence[Sample]) -> Pool:
    seen: dict[str, Passage] = {}
    for item in items:
        for p in passages_of(item):
            seen.setdefault(p.id, p)
    passages = tuple(seen.values())
    h = hashlib.sha256()
    for p in passages:
        h.update(f"{p.id}\x00{p.title}\x00{p.text}\x01".encode())
    answers = tuple(answers_of(s)[0] for s in items if answers_of(s) and not is_unanswerable(s))
    return Pool(
        passages=passages,
        questions=tuple(s.input for s in items),
        answers=answers,
        digest=h.hexdigest()[:16],
        index_of={p.id: i for i, p in enumerate(passages)},
    )


def shown_text(p: Passage) -> str:
    """What the prompt shows of a passage: its title and its text (an answer in a title counts:
    the model reads it)."""
    return f"{p.title}\n{p.text}" if p.title else p.text


def mentions_answer(p: Passage, item: Sample) -> bool:
    """Whether ``p`` (title or text) contains a normalised answer alias of ``item``."""
    return alias_in(shown_text(p), answers_of(item))


def gold_passages(item: Sample) -> list[Passage]:
    return [p for p in passages_of(item) if p.gold]


def own_ids(item: Sample) -> set[str]:
    """Ids of the item's own passages (as the task gives them) and of its counterfactual:
    never drawn as a distractor or filler for this item."""
    ids = {p.id for p in passages_of(item)}
    cf = item.metadata.get("counterfactual")
    if isinstance(cf, dict) and isinstance(cf.get("passage"), dict):
        ids.add(str(cf["passage"].get("id")))
    return ids

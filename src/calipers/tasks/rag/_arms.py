"""The degradations of a :class:`RagArm` (semantics in ``_arm``), one item at a time.

Each item's shown passages are built in steps: the base (the item's own passages, or a real
retriever's top ``k``), then noise or a placed gold passage, then gold dropped, then the
counterfactual swapped in, then the order; a fill arm then puts filler before them
(``_fill``). What the arm did is recorded in the item's ``metadata["arm"]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calipers.errors import ConfigError
from calipers.tasks._perturb import list_perturbations, perturb_text
from calipers.tasks.rag._arm import PromptBudget, RagArm
from calipers.tasks.rag._counterfactual import counterfactual_for
from calipers.tasks.rag._distractors import Drawer, item_rng
from calipers.tasks.rag._fill import fill_items
from calipers.tasks.rag._item import Passage, passages_of, with_passages
from calipers.tasks.rag._pool import Pool, build_pool, gold_passages, mentions_answer
from calipers.tasks.rag._retrieval import index_for, rank
from calipers.types import Sample

__all__ = ["DEFAULT_K", "degrade", "distractor_count"]

DEFAULT_K = 5
"""Passage slots of a noise, position or real-retriever arm that does not set ``k``."""


def degrade(
    items: Sequence[Sample], pool: Sequence[Sample], arm: RagArm, budget: PromptBudget | None
) -> list[Sample]:
    """``items`` showing the passages ``arm`` says; ``pool`` is every item of the task."""
    if arm.query_noise and arm.query_noise not in list_perturbations():
        raise ConfigError(
            f"Unknown query perturbation {arm.query_noise!r}.",
            hint="Use one of: " + ", ".join(list_perturbations()) + ".",
        )
    passages = build_pool(pool)
    out = [_degrade_item(item, passages, arm) for item in items]
    if arm.fill is not None:
        if budget is None:
            raise ConfigError("A context-fill arm needs the model's tokenizer and window.")
        out = fill_items(out, passages, arm.fill, arm.seed, budget)
    return out


def distractor_count(noise: float, k: int) -> int:
    """``round(noise * k)``, halves rounded up (noise 0.5 of 5 slots: 3 distractors)."""
    return min(k, math.floor(noise * k + 0.5 + 1e-9))


def _degrade_item(item: Sample, pool: Pool, arm: RagArm) -> Sample:
    drawer = Drawer(item, pool, arm.seed)
    k = arm.k or DEFAULT_K
    base, query = _base(item, pool, arm)
    if arm.position:
        shown = _positioned(item, drawer, arm, k)
    elif arm.noise:
        n_d = distractor_count(arm.noise, k)
        keep = base if arm.retriever != "oracle" else (gold_passages(item) or base)
        shown = keep[: k - n_d] + drawer.draw(n_d, arm.distractor)
    elif arm.k is not None and arm.retriever == "oracle":
        shown = base[: arm.k]
    else:
        shown = base
    if arm.gold == "drop":
        shown = _drop_gold(item, shown, drawer, arm)
    extra: dict[str, Any] = {}
    if arm.distractor == "counterfactual":
        cf = counterfactual_for(item, pool, item_rng("counterfactual", arm.seed, item.id))
        shown, swapped = _swap_in(shown, cf)
        extra["counterfactual_shown"] = swapped
        if cf is not None:
            extra["counterfactual"] = cf
    if arm.order and not arm.position:
        shown = _ordered(shown, arm, item)
    record = _record(item, shown, arm, query, bool(extra.get("counterfactual_shown")))
    meta = {"arm": record}
    if "counterfactual" in extra:
        meta["counterfactual"] = extra["counterfactual"]
    return with_passages(item, shown, **meta)


def _base(item: Sample, pool: Pool, arm: RagArm) -> tuple[list[Passage], str | None]:
    """The item's own passages (oracle), or the real retriever's top ``k`` and the query it
    was given (the question, perturbed when ``query_noise`` is set)."""
    if arm.retriever == "oracle":
        return passages_of(item), None
    query = item.input
    if arm.query_noise:
        query = perturb_text(
            arm.query_noise, query, seed=arm.seed, item_id=item.id, others=pool.questions
        )
    gold_ids = {p.id for p in gold_passages(item)}
    hidden = set() if arm.index_gold else gold_ids

    def skip(i: int) -> bool:
        return pool.passages[i].id in hidden

    k = arm.k or DEFAULT_K
    out: list[Passage] = []
    for i, _score in rank(index_for(pool, arm.retriever), query, skip):
        if len(out) == k:
            break
        p = pool.passages[i]
        out.append(p.model_copy(update={"gold": p.id in gold_ids, "kind": "retrieved"}))
    return out, query


def _positioned(item: Sample, drawer: Drawer, arm: RagArm, k: int) -> list[Passage]:
    """One gold passage first, in the middle (index ``(n - 1) // 2``) or last among ``k``."""
    golds = gold_passages(item)
    if not golds:  # unanswerable: k distractors, no gold to place
        return drawer.draw(k, arm.distractor)
    others = drawer.draw(k - 1, arm.distractor)
    n = len(others) + 1
    at = {"first": 0, "middle": (n - 1) // 2, "last": n - 1}[arm.position or "first"]
    return [*others[:at], golds[0], *others[at:]]


def _drop_gold(item: Sample, shown: list[Passage], drawer: Drawer, arm: RagArm) -> list[Passage]:
    """Every gold passage, and every other passage that contains an answer alias (a
    retrieved one can), replaced in place by a distractor: nothing shown answers."""
    kind = "hard" if arm.distractor == "hard" else "random"
    out: list[Passage] = []
    for p in shown:
        if p.gold or mentions_answer(p, item):
            out += drawer.draw(1, kind)
        else:
            out.append(p)
    return out


def _swap_in(shown: list[Passage], cf: dict[str, Any] | None) -> tuple[list[Passage], bool]:
    """The counterfactual shown instead of the gold passage it was made from (the first
    gold passage shown when the task's counterfactual does not name it)."""
    if cf is None:
        return shown, False
    target = cf.get("gold_id")
    for i, p in enumerate(shown):
        if p.gold and (target is None or p.id == target):
            passage = Passage.model_validate(cf["passage"])
            return [*shown[:i], passage, *shown[i + 1 :]], True
    return shown, False


def _ordered(shown: list[Passage], arm: RagArm, item: Sample) -> list[Passage]:
    """``relevance``: the order built (the item's or retriever's passages best first, drawn
    distractors after them); ``reverse``: that reversed; ``shuffled``: seeded per item."""
    if arm.order == "reverse":
        return shown[::-1]
    if arm.order == "shuffled":
        out = list(shown)
        item_rng("order", arm.seed, item.id).shuffle(out)
        return out
    return shown


def _record(
    item: Sample, shown: list[Passage], arm: RagArm, query: str | None, cf_shown: bool
) -> dict[str, Any]:
    gold_at = [i for i, p in enumerate(shown) if p.gold]
    n = len(shown)
    record: dict[str, Any] = {
        "arm": arm.describe(),
        "passages": n,
        "gold_shown": len(gold_at),
        "gold_position": gold_at[0] if gold_at else None,
        "noise": (n - len(gold_at)) / n if n else None,
        "answer_shown": sum(mentions_answer(p, item) for p in shown),
    }
    if arm.distractor == "counterfactual":
        record["counterfactual_shown"] = cf_shown
    if arm.retriever != "oracle":
        n_gold = len(gold_passages(item))
        record["retriever"] = arm.retriever
        record["recall"] = len(gold_at) / n_gold if n_gold else None
        record["query"] = query
    return record

"""Final labels: one answer per item and question, with where it came from.

An adjudicator's decision wins (``adjudicated``, ``by`` names them); else the counted
judgments decide: all the same (``unanimous``, or ``single`` when one person judged), a strict
plurality (``majority``), and on a tie either nothing (``unresolved``: the adjudicator's queue)
or, with ``method="weighted"``, the Dawid-Skene posterior, in which a rater who agrees with
the others more weighs more (``weighted``; used for every item that is not unanimous). Control
items (gold, attention checks), repeats and the judgments of excluded raters never count.
Pairwise preferences are mapped to ``a``/``b``/``tie`` first, so that two raters who saw the
sides swapped agree when they chose the same answer.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from calipers.review._questions import pairwise_outcome
from calipers.stats import dawid_skene
from calipers.store import AdjudicationRecord, JudgmentRecord, ReviewItemRecord

__all__ = ["FinalLabel", "Provenance", "disagreements", "final_labels", "label_key"]

Provenance = Literal["single", "unanimous", "majority", "weighted", "adjudicated", "unresolved"]
Method = Literal["majority", "weighted"]
PREFERENCE_VALUES = ("left", "right", "tie")


@dataclass(frozen=True)
class FinalLabel:
    """The final answer to one question for one item. ``votes`` counts the counted judgments
    per answer (keyed by :func:`label_key`); ``value`` is ``None`` when ``unresolved``."""

    item_key: str
    value: Any
    provenance: Provenance
    by: str | None
    n_judgments: int
    votes: dict[str, int] = field(default_factory=dict)


def label_key(value: Any) -> str:
    """A stable text key for an answer (tags are lists; pass/fail is a bool)."""
    return json.dumps(value, sort_keys=True)


def _pairwise(item: ReviewItemRecord) -> bool:
    """A pairwise item (its payload holds answers ``a`` and ``b``): only its answers are
    preferences; a single item's choice may well be called "left"."""
    return "a" in item.payload and "b" in item.payload


def _answer(v: Any, pairwise: bool, swapped: bool | None) -> Any:
    """An answer in the payload's terms: a preference mapped to ``a``/``b``/``tie``."""
    if pairwise and isinstance(v, str) and v in PREFERENCE_VALUES:
        return pairwise_outcome(v, swapped)
    return v


def _counted(
    items: Sequence[ReviewItemRecord], judgments: Sequence[JudgmentRecord], qid: str
) -> dict[str, list[tuple[str, Any]]]:
    """item key -> [(rater, answer)] over counted judgments of non-control items."""
    keep = {i.item_key: _pairwise(i) for i in items if not i.is_control}
    out: dict[str, list[tuple[str, Any]]] = {k: [] for k in keep}
    for j in judgments:
        v = j.answers.get(qid)
        if j.counted and j.item_key in keep and v is not None:
            out[j.item_key].append((j.rater, _answer(v, keep[j.item_key], j.swapped)))
    return out


def _latest(adjudications: Sequence[AdjudicationRecord], qid: str) -> dict[str, Any]:
    out: dict[str, AdjudicationRecord] = {}
    for a in adjudications:  # oldest first: the latest stays
        if a.answers.get(qid) is not None:
            out[a.item_key] = a
    return out


def final_labels(
    items: Sequence[ReviewItemRecord],
    judgments: Sequence[JudgmentRecord],
    adjudications: Sequence[AdjudicationRecord],
    question_id: str,
    *,
    method: Method = "majority",
) -> list[FinalLabel]:
    """The final label of every item that has a judgment or an adjudication, in queue order."""
    if method not in ("majority", "weighted"):
        raise ValueError(f"method must be 'majority' or 'weighted', got {method!r}")
    by_item = _counted(items, judgments, question_id)
    adj = _latest(adjudications, question_id)
    weighted = _weighted(by_item) if method == "weighted" else {}
    out: list[FinalLabel] = []
    for item in items:
        if item.item_key not in by_item:
            continue  # a control item
        given = by_item[item.item_key]
        keys = Counter(label_key(v) for _, v in given)
        values = {label_key(v): v for _, v in given}
        votes = dict(keys)
        n = len(given)
        if item.item_key in adj:
            a = adj[item.item_key]
            # an adjudicator sees a pairwise item unswapped (a on the left)
            value = _answer(a.answers[question_id], _pairwise(item), False)
            out.append(FinalLabel(item.item_key, value, "adjudicated", a.adjudicator, n, votes))
        elif n == 0:
            continue
        elif len(keys) == 1:
            prov: Provenance = "single" if n == 1 else "unanimous"
            out.append(FinalLabel(item.item_key, given[0][1], prov, None, n, votes))
        elif method == "weighted":
            value = weighted[item.item_key]
            out.append(FinalLabel(item.item_key, value, "weighted", None, n, votes))
        else:
            (top, c1), (_, c2) = keys.most_common(2)
            if c1 > c2:
                out.append(FinalLabel(item.item_key, values[top], "majority", None, n, votes))
            else:
                out.append(FinalLabel(item.item_key, None, "unresolved", None, n, votes))
    return out


def _weighted(by_item: dict[str, list[tuple[str, Any]]]) -> dict[str, Any]:
    """Each item's Dawid-Skene label, fitted on every counted judgment of the question."""
    triples = [(k, r, label_key(v)) for k, given in by_item.items() for r, v in given]
    if not triples:
        return {}
    values = {label_key(v): v for given in by_item.values() for _, v in given}
    items, raters, labels = zip(*triples, strict=True)
    fit = dawid_skene(items, raters, labels)
    return {str(i): values[str(lab)] for i, lab in zip(fit.items, fit.labels, strict=True)}


def disagreements(
    items: Sequence[ReviewItemRecord],
    judgments: Sequence[JudgmentRecord],
    adjudications: Sequence[AdjudicationRecord],
    question_id: str,
) -> list[str]:
    """Items whose counted judgments differ on the question and that no one has adjudicated
    yet, in queue order: the adjudicator's queue."""
    by_item = _counted(items, judgments, question_id)
    adj = _latest(adjudications, question_id)
    return [
        i.item_key
        for i in items
        if i.item_key in by_item
        and i.item_key not in adj
        and len({label_key(v) for _, v in by_item[i.item_key]}) > 1
    ]

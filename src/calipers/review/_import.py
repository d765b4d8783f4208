"""Labels people already gave, imported into a campaign (XSTest's annotators, hh-rlhf's choices).

A table (CSV or JSON Lines) holds one row per item: a key column, the columns that become the
item's payload (``review create``'s ``items_from_file`` reads them), and one column per person
who labelled it. Each such person becomes a rater of the campaign who cannot log in (their
token hash is a random string that no token verifies, and they have no token key), and each
of their labels an answered judgment through :meth:`Store.import_judgments`; an empty cell is
no label. A column holding the dataset's final decision is imported as adjudications, one per
item where the final label is not simply the raters' unanimous answer (they disagreed, or the
final label overrides them), so every final label keeps an honest provenance: unanimous, or
adjudicated by the dataset.

Pairwise items (:func:`pairwise_item`) put the two responses in ``a`` and ``b`` in a seeded
order that ``source`` records; :func:`preference_answer` writes a known choice as the answer
a rater would have given with ``a`` on the left.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calipers.datasets import read_records
from calipers.errors import ConfigError, DataError, StoreError
from calipers.review._questions import QuestionSet, validate_answers
from calipers.store import ImportedJudgment, ReviewCampaignRecord, ReviewItemRecord, Store

__all__ = [
    "IMPORTED_HASH_PREFIX",
    "ImportSummary",
    "final_decisions",
    "import_labels",
    "imported_judgments",
    "pairwise_item",
    "parse_assignments",
    "preference_answer",
    "read_table",
]

IMPORTED_HASH_PREFIX = "imported-no-login:"
Row = Mapping[str, Any]


def parse_assignments(values: Iterable[str], what: str) -> dict[str, str]:
    """``["a=b", "c=d"]`` (or one ``"a=b,c=d"``) as ``{"a": "b", "c": "d"}``, in order."""
    out: dict[str, str] = {}
    for value in values:
        for part in value.split(","):
            left, sep, right = part.partition("=")
            if not sep or not left.strip() or not right.strip():
                raise ConfigError(f"{what} takes NAME=VALUE, got {part!r}.")
            if left.strip() in out:
                raise ConfigError(f"{what}: {left.strip()!r} is given twice.")
            out[left.strip()] = right.strip()
    return out


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a ``.csv``, ``.jsonl`` or ``.json`` file (``calipers.datasets.read_records``)."""
    return [row for _, row in read_records(Path(path))]


def _cell(row: Row, column: str, where: str) -> Any:
    if column not in row:
        raise DataError(f"{where}: no column {column!r}; columns: {', '.join(row)}.")
    return row[column]


def _key(row: Row, key: str, prefix: str, n: int) -> str:
    value = _cell(row, key, f"row {n}")
    if value is None or str(value).strip() == "":
        raise DataError(f"row {n}: the key column {key!r} is empty.")
    return f"{prefix}{str(value).strip()}"


def _answer(
    questions: QuestionSet, question: str, raw: Any, value_map: Mapping[str, str], where: str
) -> Any:
    text = raw if not isinstance(raw, str) else raw.strip()
    value = value_map.get(text, text) if isinstance(text, str) else text
    try:
        return validate_answers(_one(questions, question), {question: value})[question]
    except ConfigError as e:
        raise DataError(f"{where}: {e.message}", hint="Map values with --value-map.") from None


def _one(questions: QuestionSet, question: str) -> QuestionSet:
    found = [q for q in questions.items() if q.id == question]
    if not found:
        known = ", ".join(q.id for q in questions.items())
        raise ConfigError(f"The campaign has no question {question!r}; its questions: {known}.")
    return QuestionSet(questions=(found[0],))


def imported_judgments(
    rows: Sequence[Row],
    *,
    key: str,
    raters: Mapping[str, str],
    questions: QuestionSet,
    question: str,
    value_map: Mapping[str, str] | None = None,
    prefix: str = "",
) -> list[ImportedJudgment]:
    """The labels in ``raters``' columns (column -> rater name) as judgments answering
    ``question``; values go through ``value_map`` and are checked against the question.
    Empty cells (missing, None, blank) are no label."""
    vm = dict(value_map or {})
    out = []
    for n, row in enumerate(rows, 1):
        item_key = _key(row, key, prefix, n)
        for column, rater in raters.items():
            raw = _cell(row, column, f"row {n}")
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                continue
            where = f"row {n}, column {column!r}"
            answer = _answer(questions, question, raw, vm, where)
            out.append(ImportedJudgment(item_key=item_key, rater=rater, answers={question: answer}))
    return out


def final_decisions(
    rows: Sequence[Row],
    judgments: Sequence[ImportedJudgment],
    *,
    key: str,
    column: str,
    questions: QuestionSet,
    question: str,
    value_map: Mapping[str, str] | None = None,
    prefix: str = "",
) -> list[tuple[str, dict[str, Any]]]:
    """``(item key, answers)`` for each row whose final label (``column``) is needed as an
    adjudication: its raters disagree, or the final label differs from their unanimous answer.
    Rows with an empty final label are left out."""
    by_item: dict[str, list[Any]] = {}
    for j in judgments:
        by_item.setdefault(j.item_key, []).append(j.answers[question])
    out = []
    for n, row in enumerate(rows, 1):
        item_key = _key(row, key, prefix, n)
        raw = _cell(row, column, f"row {n}")
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            continue
        final = _answer(questions, question, raw, dict(value_map or {}), f"row {n}, {column!r}")
        given = by_item.get(item_key, [])
        if not given or any(g != given[0] for g in given) or given[0] != final:
            out.append((item_key, {question: final}))
    return out


def pairwise_item(
    item_key: str,
    prompt: str,
    first: tuple[str, str],
    second: tuple[str, str],
    rng: np.random.Generator,
    source: Mapping[str, Any] | None = None,
) -> ReviewItemRecord:
    """A pairwise item from two ``(name, response)`` pairs: ``rng`` decides which is ``a``;
    ``source`` records ``a`` and ``b``'s names (raters never see it) and whether the order was
    swapped from the one given."""
    swap = bool(rng.integers(2))
    a, b = (second, first) if swap else (first, second)
    src = dict(source or {}) | {"a": a[0], "b": b[0], "a_is_second_given": swap}
    return ReviewItemRecord(
        item_key=item_key, payload={"prompt": prompt, "a": a[1], "b": b[1]}, source=src
    )


def preference_answer(item: ReviewItemRecord, winner: str | None) -> tuple[str, bool]:
    """A known choice (the name of ``a`` or ``b`` in the item's source, or None for a tie) as
    ``(answer, swapped)``: the answer a rater gives who sees ``a`` on the left."""
    if winner is None:
        return "tie", False
    for side, slot in (("left", "a"), ("right", "b")):
        if item.source.get(slot) == winner:
            return side, False
    raise DataError(f"Item {item.item_key!r}: {winner!r} is neither its a nor its b.")


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import added."""

    campaign: str
    items_added: int
    raters_added: tuple[str, ...]
    judgments: int
    adjudications: int


def _ensure_rater(
    store: Store, campaign: str, name: str, role: Literal["rater", "adjudicator"], pool: str
) -> bool:
    if any(r.name == name for r in store.get_raters(campaign)):
        return False
    store.add_rater(
        campaign, name, IMPORTED_HASH_PREFIX + secrets.token_hex(32), pool=pool, role=role
    )
    return True


def _check_room(store: Store, camp: ReviewCampaignRecord, rows: Sequence[ImportedJudgment]) -> None:
    """Refuse, before anything is written, a label a rater already gave on an item (the file
    imported twice) and an item that would get more than k labels."""
    had = store.get_judgments(camp.name)
    given = {(j.item_key, j.rater) for j in had}
    again = next((r for r in rows if (r.item_key, r.rater) in given), None)
    if again is not None:
        raise StoreError(
            f"{again.rater!r} already has a label on item {again.item_key!r} in {camp.name!r}.",
            hint="Was this file imported before? Each rater labels an item once.",
        )
    count = Counter(j.item_key for j in had if j.counted) + Counter(r.item_key for r in rows)
    over = next((k for k, n in count.items() if n > camp.k), None)
    if over is not None:
        raise StoreError(
            f"Item {over!r} would get {count[over]} labels; the campaign takes k={camp.k}.",
            hint="Import into a campaign whose k is the number of label columns.",
        )


def import_labels(
    store: Store,
    campaign: str,
    rows: Sequence[Row],
    *,
    key: str,
    raters: Mapping[str, str],
    question: str,
    now: datetime,
    value_map: Mapping[str, str] | None = None,
    prefix: str = "",
    pool: str = "imported",
    final_column: str | None = None,
    adjudicator: str = "dataset",
    items: Sequence[ReviewItemRecord] = (),
) -> ImportSummary:
    """Add ``items`` (if any) to ``campaign``, then its raters' labels and the final labels.

    Raters missing from the campaign are added (pool ``pool``; they cannot log in). Every label
    is checked before anything is written for it; the store refuses more labels on an item than
    the campaign's k, and a rater labelling an item twice."""
    camp: ReviewCampaignRecord = store.get_campaign(campaign)
    questions = QuestionSet.model_validate({"questions": camp.questions})
    judged = imported_judgments(
        rows,
        key=key,
        raters=raters,
        questions=questions,
        question=question,
        value_map=value_map,
        prefix=prefix,
    )
    finals = []
    if final_column is not None:
        finals = final_decisions(
            rows,
            judged,
            key=key,
            column=final_column,
            questions=questions,
            question=question,
            value_map=value_map,
            prefix=prefix,
        )
    _check_room(store, camp, judged)
    n_items = store.add_review_items(campaign, items) if items else 0
    added = [
        n
        for n in dict.fromkeys(raters.values())
        if _ensure_rater(store, campaign, n, "rater", pool)
    ]
    n_judged = store.import_judgments(campaign, judged)
    if finals and _ensure_rater(store, campaign, adjudicator, "adjudicator", pool):
        added.append(adjudicator)
    for item_key, answers in finals:
        store.adjudicate(campaign, item_key, adjudicator, answers, note=final_column, now=now)
    return ImportSummary(campaign, n_items, tuple(added), n_judged, len(finals))

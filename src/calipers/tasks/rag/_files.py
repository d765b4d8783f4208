"""The user's own RAG data: a JSONL, JSON or CSV file of questions with their passages, read
through a field mapping (:class:`RagFields`, the ``rag:`` section of a task spec).

One row is one item. Its passages are a list (in CSV: a cell holding a JSON array); each
passage is an object with its text (and optionally a title, an id and a gold flag) or plain
text. Answers are a list of aliases, a JSON array, or text with ``|`` between aliases. A row
with no answer must say it is unanswerable, or that its answer is unknown (rows converted from
traces: nothing defines a right answer there, so correctness cannot be scored). A passage is
``kind="gold"`` when its gold flag is true, else ``"retrieved"``. Every error names the file and
line of the row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from calipers.datasets import read_records
from calipers.errors import DataError
from calipers.tasks.rag._item import Passage, rag_sample
from calipers.types import Sample

__all__ = ["RagFields", "rag_samples_from_rows", "read_rag_file"]

_HINT = (
    "Map your fields under `rag:` in the task spec (question, answers, passages, text, title, "
    "gold, passage_id, unanswerable, answer_unknown, id, category); see docs/rag-tasks.md."
)
_TRUE = {"true", "1", "yes", "y"}
_FALSE = {"false", "0", "no", "n", ""}


class RagFields(BaseModel):
    """Which field of a row holds what. The defaults read the layout that
    ``rag_records_from_otel``/``rag_records_from_traffic`` write."""

    model_config = ConfigDict(extra="forbid")

    question: str = "question"
    answers: str = "answers"
    passages: str = "passages"
    text: str = Field("text", description="a passage's text, inside each passage")
    title: str = "title"
    gold: str = "gold"
    passage_id: str = "id"
    unanswerable: str = "unanswerable"
    answer_unknown: str = "answer_unknown"
    id: str = "id"
    category: str | None = None
    keep: list[str] = Field(
        default_factory=list, description="other fields copied into the item's metadata"
    )


def _bad(where: str, msg: str) -> DataError:
    return DataError(f"{where}: {msg}", hint=_HINT)


def _flag(row: dict[str, Any], key: str, where: str) -> bool:
    v = row.get(key)
    if v is None or isinstance(v, bool):
        return bool(v)
    if isinstance(v, int | float) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
        return v.strip().lower() in _TRUE
    raise _bad(where, f"field {key!r} is {v!r}, not true or false.")


def _maybe_json(v: Any) -> Any:
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _answers(row: dict[str, Any], key: str, where: str) -> list[str]:
    v = _maybe_json(row.get(key))
    if v is None:
        return []
    if isinstance(v, str):
        return [a.strip() for a in v.split("|") if a.strip()]
    if isinstance(v, int | float) and not isinstance(v, bool):
        return [str(v)]
    if isinstance(v, list) and all(isinstance(a, str | int | float) for a in v):
        return [str(a).strip() for a in v if str(a).strip()]
    raise _bad(where, f"field {key!r} must be a list of answers or text, not {v!r}.")


def _passage(p: Any, j: int, item_id: str, f: RagFields, where: str) -> Passage:
    if isinstance(p, str):
        p = {f.text: p}
    if not isinstance(p, dict) or not isinstance(p.get(f.text), str) or not p[f.text].strip():
        raise _bad(where, f"passage {j + 1} has no text (expected an object with {f.text!r}).")
    gold = _flag(p, f.gold, f"{where}: passage {j + 1}")
    pid = p.get(f.passage_id)
    return Passage(
        id=str(pid) if pid not in (None, "") else f"{item_id}/{j}",
        text=p[f.text],
        title=str(p.get(f.title) or ""),
        gold=gold,
        kind="gold" if gold else "retrieved",
    )


def _row(row: dict[str, Any], index: int, f: RagFields, where: str) -> Sample:
    question = row.get(f.question)
    if not isinstance(question, str) or not question.strip():
        raise _bad(where, f"no question in field {f.question!r} (fields: {', '.join(row)}).")
    item_id = str(row[f.id]) if row.get(f.id) not in (None, "") else str(index)
    raw = _maybe_json(row.get(f.passages))
    if not isinstance(raw, list):
        raise _bad(where, f"field {f.passages!r} must be a list of passages, not {raw!r}.")
    passages = [_passage(p, j, item_id, f, where) for j, p in enumerate(raw)]
    answers = _answers(row, f.answers, where)
    unanswerable = _flag(row, f.unanswerable, where)
    unknown = _flag(row, f.answer_unknown, where)
    if (unanswerable or unknown) and answers:
        what = "unanswerable" if unanswerable else "with an unknown answer"
        raise _bad(where, f"the item is marked {what} but has answers.")
    if not answers and not unanswerable and not unknown:
        raise _bad(
            where,
            f"no answer in field {f.answers!r}, and the item is marked neither unanswerable "
            f"({f.unanswerable!r}) nor with an unknown answer ({f.answer_unknown!r}).",
        )
    category = row.get(f.category) if f.category else None
    extra = {k: row[k] for k in f.keep if k in row}
    return rag_sample(
        item_id,
        question,
        passages,
        answers,
        unanswerable=unanswerable,
        answer_unknown=unknown,
        category=None if category in (None, "") else str(category),
        **extra,
    )


def rag_samples_from_rows(
    rows: Iterable[tuple[str, dict[str, Any]]], fields: RagFields | None = None
) -> list[Sample]:
    """RAG items from ``(where, row)`` pairs (``where`` names the row in errors: ``file:line``);
    ids must be unique."""
    f = fields or RagFields()
    out = [_row(row, i, f, where) for i, (where, row) in enumerate(rows)]
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise DataError(f"duplicate item id {s.id!r}; ids must be unique.", hint=_HINT)
        seen.add(s.id)
    return out


def read_rag_file(path: str | Path, fields: RagFields | None = None) -> list[Sample]:
    """The RAG items of a .jsonl, .json or .csv file (see the module docstring)."""
    p = Path(path)
    samples = rag_samples_from_rows(((f"{p}:{line}", row) for line, row in read_records(p)), fields)
    if not samples:
        raise DataError(f"{p}: no items.", hint=_HINT)
    return samples

"""The user's own multi-turn items: a JSONL, JSON or CSV file of conversations, read through a
field mapping (:class:`ConversationFields`, the ``conversation:`` section of a task spec).

One row is one conversation::

    {"id": "c1", "turns": ["Start at 5 and add 3.", "Now double it."],
     "golden": ["8", "16"],
     "checks": [{"turn": 1, "number": 8}, {"turn": 2, "number": 16}],
     "category": "arithmetic", "system": "Answer with a number."}

``turns`` are the user turns in order (at least one); ``golden`` (optional) the reference reply
to each turn, which the golden-history arm puts in the history in place of the model's;
``checks`` say what the model's reply at a turn (1-based) must do: ``contains`` a text
(case-insensitive), match a ``regex`` (Python syntax, searched), ``equals`` a text (stripped,
case-insensitive) or give a ``number`` (the last number in the reply, compared as a number).
At least one check per row. Every error names the file and line of the row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calipers.datasets import read_records
from calipers.errors import DataError
from calipers.types import Sample

__all__ = ["CHECK_KINDS", "ConversationFields", "conversation_samples", "read_conversation_file"]

CHECK_KINDS = ("contains", "regex", "equals", "number")
_HINT = (
    "A conversation row has turns (a list of user turns), optional golden (one reference reply "
    "per turn), checks ([{'turn': 1, 'contains' | 'regex' | 'equals' | 'number': ...}]), "
    "id, category and system; map other names under `conversation:` in the task spec. See "
    "docs/conversations.md."
)


class ConversationFields(BaseModel):
    """Which field of a row holds what, and the history arm a task file runs by default
    (``own``: the model's replies stay in the history; ``golden``: each is replaced by the
    row's golden reply to that turn)."""

    model_config = ConfigDict(extra="forbid")

    history: Literal["own", "golden"] = Field("own", description="the history arm")

    id: str = "id"
    turns: str = "turns"
    golden: str = "golden"
    checks: str = "checks"
    category: str | None = "category"
    system: str = "system"


def _bad(where: str, msg: str) -> DataError:
    return DataError(f"{where}: {msg}", hint=_HINT)


def _maybe_json(v: Any) -> Any:
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _texts(v: Any, key: str, where: str) -> list[str]:
    v = _maybe_json(v)
    if not isinstance(v, list) or not v or not all(isinstance(t, str) and t.strip() for t in v):
        raise _bad(where, f"field {key!r} must be a non-empty list of texts, not {v!r}.")
    return list(v)


def _check(c: Any, j: int, n_turns: int, where: str) -> dict[str, Any]:
    at = f"{where}: check {j + 1}"
    if not isinstance(c, dict):
        raise _bad(at, f"expected an object like {{'turn': 1, 'contains': '...'}}, not {c!r}.")
    turn = c.get("turn")
    if not isinstance(turn, int) or isinstance(turn, bool) or not 1 <= turn <= n_turns:
        raise _bad(at, f"'turn' must be a turn number from 1 to {n_turns}, not {turn!r}.")
    kinds = [k for k in CHECK_KINDS if k in c]
    extra = sorted(set(c) - {"turn", *CHECK_KINDS})
    if len(kinds) != 1 or extra:
        raise _bad(
            at,
            f"give exactly one of {', '.join(CHECK_KINDS)}"
            + (f" (unknown: {', '.join(extra)})" if extra else f" (got {kinds or 'none'})")
            + ".",
        )
    kind, value = kinds[0], c[kinds[0]]
    if kind == "number":
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise _bad(at, f"'number' must be a number, not {value!r}.") from None
    elif not isinstance(value, str) or not value:
        raise _bad(at, f"{kind!r} must be a non-empty text, not {value!r}.")
    if kind == "regex":
        try:
            re.compile(value)
        except re.error as e:
            raise _bad(at, f"'regex' {value!r} does not compile: {e}.") from None
    return {"turn": turn, "kind": kind, "value": value}


def _row(row: dict[str, Any], index: int, f: ConversationFields, where: str) -> Sample:
    turns = _texts(row.get(f.turns), f.turns, where)
    golden_raw = row.get(f.golden)
    golden = None if golden_raw in (None, "", []) else _texts(golden_raw, f.golden, where)
    if golden is not None and len(golden) != len(turns):
        raise _bad(where, f"{len(golden)} golden replies for {len(turns)} turns; give one a turn.")
    checks_raw = _maybe_json(row.get(f.checks))
    if not isinstance(checks_raw, list) or not checks_raw:
        raise _bad(where, f"field {f.checks!r} must be a non-empty list of checks.")
    checks = [_check(c, j, len(turns), where) for j, c in enumerate(checks_raw)]
    item_id = str(row[f.id]) if row.get(f.id) not in (None, "") else str(index)
    system = row.get(f.system)
    if system is not None and not isinstance(system, str):
        raise _bad(where, f"field {f.system!r} must be text.")
    category = row.get(f.category) if f.category else None
    # in ``fields``, not ``metadata``: the data hash covers them
    data: dict[str, Any] = {"turns": turns, "checks": checks}
    if golden is not None:
        data["golden"] = golden
    if system:
        data["system"] = system
    return Sample(
        id=item_id,
        input=turns[0],
        category=None if category in (None, "") else str(category),
        fields=data,
    )


def conversation_samples(
    rows: Iterable[tuple[str, dict[str, Any]]], fields: ConversationFields | None = None
) -> list[Sample]:
    """Conversation items from ``(where, row)`` pairs (``where`` names the row in errors:
    ``file:line``); ids must be unique."""
    f = fields or ConversationFields()
    out: list[Sample] = []
    seen: dict[str, str] = {}
    for i, (where, row) in enumerate(rows):
        s = _row(row, i, f, where)
        if s.id in seen:
            raise _bad(where, f"duplicate id {s.id!r} (first at {seen[s.id]}); ids are unique.")
        seen[s.id] = where
        out.append(s)
    return out


def read_conversation_file(
    path: str | Path, fields: ConversationFields | None = None
) -> list[Sample]:
    """The conversations of a .jsonl, .json or .csv file (see the module docstring)."""
    p = Path(path)
    samples = conversation_samples(((f"{p}:{line}", row) for line, row in read_records(p)), fields)
    if not samples:
        raise DataError(f"{p}: no conversations.", hint=_HINT)
    return samples

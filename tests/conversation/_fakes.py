"""Scripted fakes for the conversation tests: each plants a known behaviour, decided by a hash
of the item, so the tests recover a rate they chose rather than one the code reports."""

from __future__ import annotations

import re
from collections.abc import Sequence

from calipers._util.hashing import json_hash
from calipers.types import ChatMessage, ModelRequest


def planted(keys: Sequence[str], share: float, what: str) -> set[str]:
    """Exactly ``round(share * n)`` of ``keys``: the first in the order of their hashes."""
    order = sorted(keys, key=lambda k: json_hash([what, k]))
    return set(order[: round(share * len(keys))])


def users(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages or () if m.role == "user"]


def assistants(request: ModelRequest) -> list[ChatMessage]:
    return [m for m in request.messages or () if m.role == "assistant"]


def question_of(text: str) -> str | None:
    """The item text inside a "Question: ...\\nAnswer:" turn."""
    m = re.search(r"Question: (.*?)\nAnswer:", text, re.S)
    return m.group(1) if m else None


def last_number(text: str) -> int | None:
    found = re.findall(r"-?\d+", text)
    return int(found[-1]) if found else None

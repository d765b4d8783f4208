"""The shape every log format is parsed into before it is checked, capped and redacted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "BadRecord",
    "FieldMapping",
    "Raw",
    "as_bool",
    "as_text",
    "get_path",
    "missing",
    "role_of",
]


class BadRecord(Exception):
    """A record that cannot be imported; the message is the reason in the report."""


class FieldMapping(BaseModel):
    """Which field of a record holds what (``--field input=question``); dotted paths reach into
    nested objects (``request.body.prompt``). Unset fields are looked up under common names."""

    model_config = ConfigDict(extra="forbid")

    input: str | None = None
    output: str | None = None
    id: str | None = None
    conversation: str | None = None
    accepted: str | None = None
    system: str | None = None


@dataclass
class Raw:
    """One parsed record: messages in order (role, content), the logged answer if it came
    separately, whether the user accepted it, the log's own id, and where it was."""

    where: str
    line: int | None
    messages: list[tuple[str, str]] = field(default_factory=list)
    answer: str | None = None
    accepted: bool | None = None
    record_id: str | None = None


_ROLES = {
    "user": "user",
    "human": "user",
    "customer": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "gpt": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
}


def role_of(value: Any) -> str:
    role = _ROLES.get(str(value).strip().lower())
    if role is None:
        raise BadRecord(f"unknown message role {str(value)[:20]!r}")
    return role


def as_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts
    (``{"type": "text", "text": ...}``); images and other parts are left out."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                text = p.get("text", p.get("content"))
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    if isinstance(content, int | float) and not isinstance(content, bool):
        return str(content)
    raise BadRecord(f"message content is a {type(content).__name__}, not text")


_TRUE = {"true", "yes", "y", "1", "accepted", "accept", "up", "thumbs_up", "good", "+1", "👍"}
_FALSE = {"false", "no", "n", "0", "rejected", "reject", "down", "thumbs_down", "bad", "-1", "👎"}


def as_bool(value: Any) -> bool | None:
    """A logged acceptance signal as True/False; anything unrecognised is ``None`` (unknown)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value > 0)
    if isinstance(value, str):
        v = value.strip().lower()
        return True if v in _TRUE else False if v in _FALSE else None
    return None


_MISSING = object()


def get_path(obj: Any, path: str) -> Any:
    """``obj["a"]["b"][0]`` for ``"a.b.0"``; a missing step gives the sentinel ``_MISSING``
    (use :func:`has_path`), so a present ``null`` is told apart from an absent field."""
    cur = obj
    for step in path.split("."):
        if isinstance(cur, dict) and step in cur:
            cur = cur[step]
        elif isinstance(cur, list) and step.isdigit() and int(step) < len(cur):
            cur = cur[int(step)]
        else:
            return _MISSING
    return cur


def missing(value: Any) -> bool:
    return value is _MISSING

"""The passages of a RAG request, as a client sends them through the gateway and as the
gateway keeps them in the stored traffic row.

A client sends what its retriever returned in the request body, next to the model's fields::

    {"model": "...", "messages": [...],
     "calipers_rag": {"passages": [{"id": "doc-7", "title": "...", "text": "..."}]}}

The gateway checks the field (:func:`read_rag`: a malformed one is refused with HTTP 400),
removes it from what the upstream gets and keeps it in the stored row's ``request`` under
:data:`RAG_FIELD` (redacted like the rest). Monitoring reads it back with :func:`rag_of`. See
``docs/gateway.md`` and ``docs/monitor.md`` ("RAG traffic").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "MAX_RAG_CHARS",
    "MAX_RAG_PASSAGES",
    "RAG_FIELD",
    "RagContext",
    "RagFieldError",
    "TrafficPassage",
    "rag_of",
    "read_rag",
]

RAG_FIELD = "calipers_rag"
MAX_RAG_PASSAGES = 256
"""Passages one request may carry."""
MAX_RAG_CHARS = 500_000
"""Characters of passage text (titles included) one request may carry: more than a 128K-token
window holds, so no prompt a model can read is refused, while a runaway client cannot make
every stored row megabytes long."""


class RagFieldError(ValueError):
    """The ``calipers_rag`` field of a request is not in the agreed shape; the message says
    which part and why."""


class TrafficPassage(BaseModel):
    """One passage the retriever returned: ``text`` is required, ``id`` and ``title``
    optional."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str | int | None = None
    title: str = ""
    text: str

    @property
    def content(self) -> str:
        """What support is checked against: the title (if any) and the text."""
        return f"{self.title}\n{self.text}" if self.title else self.text


class RagContext(BaseModel):
    """The value of ``calipers_rag``: the passages shown to the model, in order (an empty
    list is allowed: the retriever found nothing)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    passages: list[TrafficPassage] = Field(max_length=MAX_RAG_PASSAGES)
    # the user's question alone, where the messages hold more (instructions, the passages):
    # what a RAG suite built from this traffic asks (default: the last user message)
    question: str | None = None

    @model_validator(mode="after")
    def _size(self) -> RagContext:
        size = sum(len(p.title) + len(p.text) for p in self.passages)
        if size > MAX_RAG_CHARS:
            raise ValueError(
                f"the passages hold {size:,} characters, more than the {MAX_RAG_CHARS:,} the "
                "gateway keeps per request"
            )
        return self

    @property
    def texts(self) -> list[str]:
        return [p.content for p in self.passages]


def _where(loc: tuple[int | str, ...]) -> str:
    path = RAG_FIELD
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def read_rag(value: Any) -> RagContext:
    """``value`` (the field as sent) checked; :class:`RagFieldError` names the problems (the
    first three), e.g. ``calipers_rag.passages[2].text: Field required``."""
    if not isinstance(value, Mapping):
        raise RagFieldError(
            f"{RAG_FIELD} must be an object such as "
            '{"passages": [{"id": "doc-1", "title": "...", "text": "..."}]}, '
            f"not {type(value).__name__}"
        )
    try:
        return RagContext.model_validate(dict(value))
    except ValidationError as e:
        problems = [
            f"{_where(tuple(err['loc']))}: {str(err['msg']).removeprefix('Value error, ')}"
            for err in e.errors()[:3]
        ]
        raise RagFieldError("; ".join(problems)) from None


def rag_of(request: Mapping[str, Any]) -> RagContext | None:
    """The passages a stored request carried, or ``None`` when it carried none (or the
    field is not in the agreed shape: a row written by something other than the gateway)."""
    value = request.get(RAG_FIELD)
    if value is None:
        return None
    try:
        return read_rag(value)
    except RagFieldError:
        return None

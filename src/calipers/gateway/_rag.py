"""RAG requests: the passages a client sends in ``calipers_rag`` (``calipers.store.read_rag``)
are checked, kept for the log and taken out of what the upstream gets.

A malformed field is refused with a 400 naming the problem, before any upstream is called,
rather than logged and forwarded: the client opted into the convention, so a wrong shape is a
bug in its code that shows on its first request, while forwarding it would leave monitoring
silently counting no RAG traffic (or crash a strict upstream on the unknown field anyway).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.responses import Response

from calipers.store import RAG_FIELD, RagFieldError, read_rag

__all__ = ["forwarded_bytes", "rag_refusal", "split_rag"]

_log = logging.getLogger("calipers.gateway")


def forwarded_bytes(body: dict[str, Any]) -> bytes:
    """``body`` as sent upstream: without :data:`RAG_FIELD`."""
    return json.dumps(
        {k: v for k, v in body.items() if k != RAG_FIELD}, ensure_ascii=False
    ).encode()


def split_rag(body: Any, raw: bytes) -> tuple[bytes, bool]:
    """The bytes to send upstream and whether the request carries passages: ``raw`` itself
    when it does not, else the body re-encoded without the field. Raises
    :class:`~calipers.store.RagFieldError` when the field is malformed."""
    if not isinstance(body, dict) or RAG_FIELD not in body:
        return raw, False
    read_rag(body[RAG_FIELD])
    return forwarded_bytes(body), True


def rag_refusal(error: RagFieldError) -> Response:
    """The 400 for a malformed field, in OpenAI's error shape (``param`` names the field)."""
    message = (
        f"Invalid {RAG_FIELD}: {error}. Send the passages your retriever returned as "
        f'{{"{RAG_FIELD}": {{"passages": [{{"id": "doc-1", "title": "...", "text": "..."}}]}}}} '
        "(see the calipers gateway docs, 'RAG traffic')."
    )
    _log.info("refused a request with a malformed %s: %s", RAG_FIELD, error)
    body = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": RAG_FIELD,
            "code": "invalid_calipers_rag",
        }
    }
    return Response(json.dumps(body).encode(), 400, media_type="application/json")

"""One upstream call as the request path sees it (cheap to make), and its conversion into the
stored :class:`~calipers.store.TrafficRecord` (parsing and redaction: done by the log writer,
off the user path)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from calipers.gateway._parse import Parsed, parse_answer
from calipers.gateway._redact_hook import Redact, redact_json, with_secrets
from calipers.gateway._routing import hash_key
from calipers.store import TrafficRecord, TrafficRole

__all__ = ["Call", "to_record"]

_MAX_ERROR_BODY = 2000
_MAX_RAW_REQUEST = 20_000


@dataclass(slots=True)
class Call:
    """What happened on one upstream call. ``content`` is the whole body (streamed or not);
    ``status`` is ``None`` when no response came back; times are milliseconds."""

    pair_id: str
    role: TrafficRole
    served: bool
    mode: str
    endpoint: str
    upstream: str
    ts: datetime
    user_key_hash: str | None
    body: Any
    raw: bytes
    stream: bool
    status: int | None = None
    content: bytes = b""
    error: str | None = None
    latency_ms: float | None = None
    ttft_ms: float | None = None
    parsed: Parsed | None = None
    secrets: tuple[str, ...] = ()
    """The keys the request carried: pieces of them are redacted from what is stored."""

    def parse(self) -> Parsed | None:
        """The parsed answer of a 2xx response (cached), else ``None``."""
        if self.parsed is None and self.status is not None and 200 <= self.status < 300:
            self.parsed = parse_answer(self.content, endpoint=self.endpoint, stream=self.stream)
        return self.parsed


def _request_json(call: Call, redact: Redact, salt: str) -> dict[str, Any]:
    if isinstance(call.body, dict):
        body = dict(redact_json(call.body, redact))
        if isinstance(call.body.get("user"), str):  # the end-user id OpenAI's API asks for
            body["user"] = f"hash:{hash_key(call.body['user'], salt)}"
        return body
    text = call.raw[:_MAX_RAW_REQUEST].decode("utf-8", errors="replace")
    return {"_unparsed": redact(text)}


def _error(call: Call, parsed: Parsed | None, redact: Redact) -> str | None:
    if call.error is not None:
        return redact(call.error)
    if call.status is not None and not 200 <= call.status < 300:
        body = call.content[:_MAX_ERROR_BODY].decode("utf-8", errors="replace")
        return redact(f"HTTP {call.status}: {body}")
    if parsed is not None and parsed.invalid is not None:
        return redact(f"invalid response: {parsed.invalid}")
    return None


def _storable(text: str | None) -> str | None:
    """``text`` without NUL characters, which PostgreSQL cannot store in a text column (the
    whole batch would be refused): each becomes U+FFFD, on every store alike."""
    return text.replace("\x00", "\ufffd") if text is not None and "\x00" in text else text


def to_record(call: Call, redact: Redact, salt: str = "calipers") -> TrafficRecord:
    """The row to store for ``call``, with its request and answer redacted and the body's
    ``user`` field replaced by its salted hash; any piece (8+ characters) of a key the
    request carried is removed too. NUL characters in the answer's text become U+FFFD (the
    JSON of the request keeps them, escaped)."""
    redact = with_secrets(redact, call.secrets)
    parsed = call.parse()
    model = call.body.get("model") if isinstance(call.body, dict) else None
    text = parsed.text if parsed is not None else None
    return TrafficRecord(
        pair_id=call.pair_id,
        role=call.role,
        served=call.served,
        mode=call.mode,
        endpoint=call.endpoint,
        upstream=call.upstream,
        ts=call.ts,
        user_key_hash=call.user_key_hash,
        model=_storable(model if isinstance(model, str) else (parsed.model if parsed else None)),
        stream=call.stream,
        request=_request_json(call, redact, salt),
        response=_storable(redact(text)) if text is not None else None,
        finish_reason=_storable(parsed.finish_reason) if parsed else None,
        status=call.status,
        error=_storable(_error(call, parsed, redact)),
        latency_ms=call.latency_ms,
        ttft_ms=call.ttft_ms,
        input_tokens=parsed.input_tokens if parsed else None,
        output_tokens=parsed.output_tokens if parsed else None,
    )

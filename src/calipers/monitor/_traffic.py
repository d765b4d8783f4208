"""The gateway's log read back as user requests: each request with its baseline call and its
candidate call (either may be missing), the user's input as text, in arrival order.

What ``calipers ab`` scores and ``calipers monitor`` windows; both read the store through
:func:`load_exchanges` and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from calipers.store import Store, TrafficRecord

__all__ = ["Exchange", "load_exchanges", "messages_of", "pair_records", "prompt_text"]


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def messages_of(request: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """``(role, text)`` of a chat request's messages; ``None`` for a completions request."""
    msgs = request.get("messages")
    if not isinstance(msgs, list):
        return None
    return tuple(
        (str(m.get("role", "user")), _text(m.get("content"))) for m in msgs if isinstance(m, dict)
    )


def prompt_text(request: dict[str, Any]) -> str:
    """The user's input: the last user message of a chat request, the prompt of a completions
    request (the first one of a list), else the raw text the gateway could not parse."""
    msgs = messages_of(request)
    if msgs is not None:
        users = [text for role, text in msgs if role == "user"]
        return users[-1] if users else (msgs[-1][1] if msgs else "")
    prompt = request.get("prompt")
    if isinstance(prompt, list):
        prompt = prompt[0] if prompt else ""
    if isinstance(prompt, str):
        return prompt
    raw = request.get("_unparsed")
    return raw if isinstance(raw, str) else ""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One user request as the gateway logged it. ``baseline``/``candidate`` are the calls
    made to each upstream (``None`` when that arm was not called: a request not mirrored in
    shadow mode, the other group's arm in canary mode, or a write that was lost)."""

    pair_id: str
    ts: datetime
    mode: str
    user_key_hash: str | None
    request: dict[str, Any]
    baseline: TrafficRecord | None
    candidate: TrafficRecord | None

    @property
    def prompt(self) -> str:
        return prompt_text(self.request)

    @property
    def served(self) -> TrafficRecord | None:
        """The call whose answer the user got."""
        for rec in (self.baseline, self.candidate):
            if rec is not None and rec.served:
                return rec
        return None

    @property
    def paired(self) -> bool:
        """Both models answered this request (shadow traffic)."""
        return self.baseline is not None and self.candidate is not None


def pair_records(records: Iterable[TrafficRecord]) -> list[Exchange]:
    """Group records by ``pair_id``, ordered by the request's first record."""
    groups: dict[str, dict[str, TrafficRecord]] = {}
    for rec in records:
        groups.setdefault(rec.pair_id, {})[rec.role] = rec
    out = []
    for pair_id, arms in groups.items():
        first = min(arms.values(), key=lambda r: (r.ts, r.id or 0))
        out.append(
            Exchange(
                pair_id,
                first.ts,
                first.mode,
                first.user_key_hash,
                first.request,
                arms.get("baseline"),
                arms.get("candidate"),
            )
        )
    return sorted(out, key=lambda e: e.ts)


def load_exchanges(
    store: Store,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    modes: Sequence[str] | None = None,
) -> list[Exchange]:
    """The logged requests that arrived in ``[since, until)``, oldest first; ``modes`` keeps
    only requests made in those gateway modes (``shadow``, ``canary``, ``off``)."""
    exchanges = pair_records(store.get_traffic(since=since, until=until))
    if modes is not None:
        keep = set(modes)
        exchanges = [e for e in exchanges if e.mode in keep]
    return exchanges

"""Reading an OpenAI-compatible answer, whole or streamed (SSE), for the log: its text, finish
reason and token counts, or why it is not a valid answer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["Parsed", "parse_answer"]


@dataclass(frozen=True, slots=True)
class Parsed:
    text: str | None = None
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None
    invalid: str | None = None
    """Why the body is not a completion (``None`` when it is one)."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(obj: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None, None
    return _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))


def _choice_text(choice: dict[str, Any], chat: bool, delta: bool) -> str | None:
    if not chat:
        text = choice.get("text")
        return text if isinstance(text, str) else None
    message = choice.get("delta" if delta else "message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    calls = message.get("tool_calls")
    return json.dumps(calls, ensure_ascii=False) if calls else None


def _whole(content: bytes, chat: bool) -> Parsed:
    try:
        obj = json.loads(content)
    except (ValueError, UnicodeDecodeError):
        return Parsed(invalid=f"the body is not JSON: {content[:80]!r}")
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return Parsed(invalid="the JSON body has no choices")
    first = choices[0]
    prompt, completion = _usage(obj)
    reason = first.get("finish_reason")
    model = obj.get("model")
    return Parsed(
        text=_choice_text(first, chat, delta=False),
        finish_reason=reason if isinstance(reason, str) else None,
        input_tokens=prompt,
        output_tokens=completion,
        model=model if isinstance(model, str) else None,
    )


def _events(content: bytes) -> list[str]:
    text = content.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return [line[5:].strip() for line in text.split("\n") if line.startswith("data:")]


def _streamed(content: bytes, chat: bool) -> Parsed:
    parts: list[str] = []
    reason: str | None = None
    prompt = completion = None
    model: str | None = None
    events = [e for e in _events(content) if e and e != "[DONE]"]
    if not events:
        return Parsed(invalid="the stream has no data events")
    for payload in events:
        try:
            obj = json.loads(payload)
        except ValueError:
            return Parsed(text="".join(parts), invalid=f"invalid SSE event {payload[:80]!r}")
        if not isinstance(obj, dict) or "error" in obj:
            return Parsed(text="".join(parts), invalid=f"error event {payload[:200]!r}")
        choices = obj.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            piece = _choice_text(choices[0], chat, delta=True)
            parts.append(piece or "")
            reason = choices[0].get("finish_reason") or reason
        p, c = _usage(obj)
        prompt, completion = p if p is not None else prompt, c if c is not None else completion
        model = obj.get("model") if isinstance(obj.get("model"), str) else model
    return Parsed(
        text="".join(parts),
        finish_reason=reason if isinstance(reason, str) else None,
        input_tokens=prompt,
        output_tokens=completion,
        model=model,
    )


def parse_answer(content: bytes, *, endpoint: str, stream: bool) -> Parsed:
    """The answer in ``content`` (a whole JSON body, or the bytes of an SSE stream)."""
    chat = endpoint == "chat/completions"
    return _streamed(content, chat) if stream else _whole(content, chat)

"""Tool calls in the OpenAI chat-completions wire format.

Requests: ``tools`` as ``[{"type": "function", "function": {name, description,
parameters}}]``; an assistant message with calls carries ``tool_calls`` (``{id, type:
"function", function: {name, arguments}}``, ``arguments`` a JSON string) and its text as
``content`` (``""`` when it has none: llama-cpp-python's server rejects null); a tool result is
``{"role": "tool", "tool_call_id", "content"}``.

Replies: ``message.tool_calls`` parsed into :class:`ToolCall`. ``arguments`` arrives as a JSON
string (some servers send an object); a string that is not a JSON object gives a call with
``arguments=None``, the ``raw`` text and an ``error``, never an exception. The legacy
``message.function_call`` (one call, no id) is read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from calipers.types import ChatMessage, ToolCall, ToolSpec

__all__ = ["parse_arguments", "parse_tool_calls", "wire_messages", "wire_tools"]


def wire_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _arguments_text(call: ToolCall) -> str:
    if call.arguments is not None:
        return json.dumps(call.arguments, ensure_ascii=False)
    return call.raw or ""


def wire_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.tool_calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": _arguments_text(c)},
                }
                for c in m.tool_calls
            ]
            out.append({"role": m.role, "content": m.content, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def parse_arguments(value: Any) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``(arguments, raw, error)`` from a call's ``arguments`` as the server sent it."""
    if isinstance(value, dict):
        return value, None, None
    if value is None or value == "":
        return {}, None, None  # a call without arguments
    raw = value if isinstance(value, str) else json.dumps(value)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as e:
        return None, raw, f"the arguments are not valid JSON ({e.msg} at character {e.pos})"
    if not isinstance(parsed, dict):
        return None, raw, f"the arguments are JSON {type(parsed).__name__}, not an object"
    return parsed, None, None


def _call(item: Any, fallback_id: str) -> ToolCall:
    fn = item.get("function") if isinstance(item, dict) else None
    if not isinstance(fn, dict):
        return ToolCall(id=fallback_id, name="", raw=json.dumps(item), error="no function in call")
    args, raw, error = parse_arguments(fn.get("arguments"))
    return ToolCall(
        id=str(item.get("id") or fallback_id),
        name=str(fn.get("name") or ""),
        arguments=args,
        raw=raw,
        error=error,
    )


def parse_tool_calls(message: dict[str, Any]) -> tuple[ToolCall, ...]:
    """The calls in a reply's ``message`` (empty when it has none)."""
    items = message.get("tool_calls")
    if isinstance(items, list) and items:
        return tuple(_call(item, f"call_{i}") for i, item in enumerate(items))
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        return (_call({"function": legacy}, "call_0"),)
    return ()

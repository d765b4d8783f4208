"""Tool calling on a local GGUF model: tools described in the prompt, replies constrained by a
grammar so that every call a small model makes parses.

How a request with tools is rendered (format ``TOOL_FORMAT``, the provider's ``tool_format()``:
recorded in an episode task's methodology and in the cache key of requests with tools, so runs
under two formats are never compared or cached as one):

- a block describing each tool (name, description, each argument with its type, whether it is
  required, its allowed values and description) and the reply format goes at the end of the
  system message (a system message is added when there is none);
- the reply must be one JSON value: ``{"tool": NAME, "arguments": {...}}`` for a call, a list
  of such objects for several calls at once, or ``{"answer": TEXT}`` for a plain answer;
- decoding is constrained by a grammar built from the JSON schema of those three forms, each
  tool's arguments by its own schema (``llama_cpp.LlamaGrammar.from_json_schema``): objects
  that declare properties allow no others, free strings end within ``ARG_MAX_CHARS``
  characters, arrays within ``ARG_MAX_ITEMS`` items and a reply within ``MAX_CALLS`` calls
  (so that a small model's repetition loop still closes its JSON);
- chat templates such as SmolLM2's know only system, user and assistant. An assistant message
  with tool calls is shown as the JSON the model writes for them; a plain assistant reply as
  ``{"answer": ...}``; the results of one step's calls (``tool`` messages) as one user message
  that starts ``Tool results:`` with a line ``NAME returned: RESULT`` per call.

A reply that is still not a JSON value (cut off by ``max_tokens`` inside a large argument)
becomes a call with ``arguments=None``, its ``raw`` text and an ``error``; an answer cut off
keeps the text written so far.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from calipers._util.hashing import json_hash
from calipers.types import ChatMessage, ModelRequest, ToolCall, ToolSpec

__all__ = [
    "ARG_MAX_CHARS",
    "ARG_MAX_ITEMS",
    "MAX_CALLS",
    "TOOL_FORMAT",
    "chat_messages",
    "constrain",
    "grammar_for",
    "output_schema",
    "parse_reply",
    "tools_prompt",
]

TOOL_FORMAT = "calipers-json-1"
ARG_MAX_CHARS = 100  # a free string argument
ARG_MAX_ITEMS = 10  # an array argument
MAX_CALLS = 4  # calls in one reply
_GRAMMARS: dict[str, Any] = {}
_ANSWER_START = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_TOOL_NAME = re.compile(r'"tool"\s*:\s*"([^"]*)"')


# -- the prompt ------------------------------------------------------------------------------


def _type_words(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return f"exactly {json.dumps(schema['const'])}"
    kind = schema.get("type", "any value")
    kind = " or ".join(kind) if isinstance(kind, list) else str(kind)
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"array of {_type_words(schema['items'])}"
    if kind == "object" and isinstance(schema.get("properties"), Mapping):
        keys = ", ".join(schema["properties"])
        return f"object with {keys}"
    return kind


def tools_prompt(tools: Sequence[ToolSpec], *, parallel: bool = True) -> str:
    lines = ["You can use these tools:", ""]
    for t in tools:
        lines.append(f"- {t.name}: {t.description}".rstrip(": ").rstrip())
        props: Mapping[str, Any] = t.parameters.get("properties") or {}
        required = set(t.parameters.get("required") or ())
        for name, schema in props.items():
            schema = schema if isinstance(schema, Mapping) else {}
            need = ", required" if name in required else ""
            about = f": {schema['description']}" if schema.get("description") else ""
            lines.append(f"    {name} ({_type_words(schema)}{need}){about}")
        if not props:
            lines.append("    (no arguments)")
    lines += [
        "",
        "Reply with JSON only.",
        'To call a tool: {"tool": "<tool name>", "arguments": {"<argument>": <value>}}',
    ]
    if parallel:
        lines.append('To call several tools at once: a list, [{"tool": ...}, {"tool": ...}]')
    lines += [
        'To answer without a tool: {"answer": "<your answer>"}',
        'Tool results come back in a user message that starts with "Tool results:".',
    ]
    return "\n".join(lines)


def _call_json(calls: Sequence[ToolCall]) -> str:
    objs = [
        {"tool": c.name, "arguments": c.arguments if c.arguments is not None else (c.raw or "")}
        for c in calls
    ]
    return json.dumps(objs[0] if len(objs) == 1 else objs, ensure_ascii=False)


def chat_messages(request: ModelRequest) -> tuple[ChatMessage, ...]:
    """The messages as a system/user/assistant chat template renders them (see the module
    docstring); a request without tools or tool messages as it is."""
    msgs = request.messages or ()
    tools = request.tools or ()
    if not tools and all(m.role != "tool" and not m.tool_calls for m in msgs):
        return msgs
    out: list[ChatMessage] = []
    results: list[str] = []

    def flush() -> None:
        if results:
            out.append(ChatMessage(role="user", content="Tool results:\n" + "\n".join(results)))
            results.clear()

    for m in msgs:
        if m.role == "tool":
            results.append(f"{m.name or 'tool'} returned: {m.content}")
            continue
        flush()
        if m.role == "assistant" and m.tool_calls:
            out.append(ChatMessage(role="assistant", content=_call_json(m.tool_calls)))
        elif m.role == "assistant" and tools:
            answer = json.dumps({"answer": m.content}, ensure_ascii=False)
            out.append(ChatMessage(role="assistant", content=answer))
        else:
            out.append(ChatMessage(role=m.role, content=m.content))
    flush()
    if tools:
        block = tools_prompt(tools)
        if out and out[0].role == "system":
            out[0] = ChatMessage(role="system", content=f"{out[0].content}\n\n{block}")
        else:
            out.insert(0, ChatMessage(role="system", content=block))
    return tuple(out)


# -- the grammar -----------------------------------------------------------------------------


def constrain(schema: Any) -> Any:
    """A tool's argument schema as the grammar enforces it: objects with properties allow no
    others, free strings at most ``ARG_MAX_CHARS`` characters, arrays at most
    ``ARG_MAX_ITEMS`` items, recursively."""
    if not isinstance(schema, Mapping):
        return schema
    out = {k: v for k, v in schema.items() if k not in ("description", "title", "default")}
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: constrain(v) for k, v in out["properties"].items()}
        out.setdefault("additionalProperties", False)
    if "items" in out:
        out["items"] = constrain(out["items"])
    if out.get("type") == "array":
        out["maxItems"] = min(int(out.get("maxItems", ARG_MAX_ITEMS)), ARG_MAX_ITEMS)
    free = not any(k in out for k in ("enum", "const", "pattern", "format", "maxLength"))
    if out.get("type") == "string" and free:
        out["maxLength"] = ARG_MAX_CHARS
    return out


def _call_schema(tool: ToolSpec, arguments: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"tool": {"const": tool.name}, "arguments": arguments},
        "required": ["tool", "arguments"],
        "additionalProperties": False,
    }


def output_schema(tools: Sequence[ToolSpec], *, parallel: bool = True) -> dict[str, Any]:
    """The JSON schema of a reply: one call of any tool, a list of calls, or an answer."""
    calls = [_call_schema(t, constrain(_object(t.parameters))) for t in tools]
    forms: list[dict[str, Any]] = list(calls)
    if parallel and calls:
        forms.append(
            {"type": "array", "items": {"anyOf": calls}, "minItems": 1, "maxItems": MAX_CALLS}
        )
    forms.append(
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": forms}


def _object(parameters: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(parameters)
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def grammar_for(tools: Sequence[ToolSpec]) -> Any:
    """The ``LlamaGrammar`` of ``output_schema(tools)``, cached by schema. A tool whose schema
    the converter cannot handle has its arguments loosened to any JSON object."""
    from llama_cpp.llama_grammar import LlamaGrammar

    schema = output_schema(tools)
    key = json_hash(schema)
    if key not in _GRAMMARS:
        try:
            grammar = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        except Exception:  # the converter rejects some schema features: loosen, once
            loose = [t.model_copy(update={"parameters": {"type": "object"}}) for t in tools]
            grammar = LlamaGrammar.from_json_schema(json.dumps(output_schema(loose)), verbose=False)
        if len(_GRAMMARS) > 64:
            _GRAMMARS.clear()
        _GRAMMARS[key] = grammar
    return _GRAMMARS[key]


# -- the reply -------------------------------------------------------------------------------


def _partial_string(rest: str) -> str:
    """The text of a JSON string cut off somewhere inside (escapes decoded where whole)."""
    for end in range(len(rest), max(-1, len(rest) - 8), -1):
        try:
            return str(json.loads(f'"{rest[:end]}"', strict=False))
        except json.JSONDecodeError:
            continue
    return rest


def parse_reply(text: str, prefix: str) -> tuple[str, tuple[ToolCall, ...]]:
    """The answer text and the calls in a reply; calls get ids ``{prefix}_{i}``."""
    try:  # not strict: the grammar lets raw newlines into strings
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        if m := _ANSWER_START.match(text):
            return _partial_string(text[m.end() :]), ()
        name = m.group(1) if (m := _TOOL_NAME.search(text)) else ""
        why = f"the reply is not complete JSON ({e.msg} at character {e.pos})"
        return "", (ToolCall(id=f"{prefix}_0", name=name, raw=text, error=why),)
    if isinstance(value, dict) and "answer" in value and "tool" not in value:
        return str(value["answer"]), ()
    items = value if isinstance(value, list) else [value]
    calls = []
    for i, c in enumerate(items):
        cid = f"{prefix}_{i}"
        if not isinstance(c, dict) or not isinstance(c.get("tool"), str):
            raw = json.dumps(c)
            calls.append(ToolCall(id=cid, name="", raw=raw, error="not a tool call object"))
        elif not isinstance(c.get("arguments"), dict):
            raw = json.dumps(c.get("arguments"))
            err = "the arguments are not a JSON object"
            calls.append(ToolCall(id=cid, name=c["tool"], raw=raw, error=err))
        else:
            calls.append(ToolCall(id=cid, name=c["tool"], arguments=c["arguments"]))
    return "", tuple(calls)


def call_prefix(request: ModelRequest) -> str:
    """Call ids unique within a conversation: ``call_{k}`` for the k-th step with calls."""
    k = sum(1 for m in request.messages or () if m.role == "assistant" and m.tool_calls)
    return f"call_{k}"

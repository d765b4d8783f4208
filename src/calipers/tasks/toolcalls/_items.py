"""Tool-calling items in BFCL's format, read into samples.

A record is ``{"id", "question", "function", ...}``: ``question`` the user's message (a string,
or BFCL's ``[[{"role": ..., "content": ...}, ...]]``: the first turn's messages), ``function``
the tools offered (name, description, ``parameters`` as a schema), and the expected calls in
``ground_truth`` (BFCL keeps them apart, in ``possible_answer/``, joined by id): a list of
``{"function": {"argument": [allowed values]}}``, empty when no call is right.

Samples keep the expected calls as JSON in ``target`` and the tools in ``fields["tools"]`` (so
both are in the data hash), the opening messages in ``fields["messages"]``. BFCL writes
schemas with Python type names (``dict``, ``float``, ``tuple``, ``any``); they become JSON
Schema (``object``, ``number``, ``array``, no type). Tool names with dots (``math.factorial``)
get underscores in both the tools and the expected calls, as BFCL does for OpenAI models, whose
API allows only ``[a-zA-Z0-9_-]`` in a name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from calipers._util.hashing import text_hash
from calipers.errors import DataError
from calipers.types import ChatMessage, Sample, ToolSpec

__all__ = ["safe_name", "sample_from_record", "to_json_schema", "tool_specs"]

_TYPE_NAMES = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "int": "integer",
    "str": "string",
    "bool": "boolean",
    "list": "array",
}
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def safe_name(name: str) -> str:
    """A tool name as OpenAI's API accepts it (dots and other characters become ``_``)."""
    return _UNSAFE.sub("_", name)[:64]


def to_json_schema(schema: Any) -> Any:
    """BFCL's parameter schema as JSON Schema: Python type names mapped, ``any`` dropped,
    recursively through ``properties`` and ``items``."""
    if not isinstance(schema, Mapping):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        if kind == "any":
            out.pop("type")
        else:
            out["type"] = _TYPE_NAMES.get(kind, kind)
    if isinstance(out.get("properties"), Mapping):
        out["properties"] = {k: to_json_schema(v) for k, v in out["properties"].items()}
    if "items" in out:
        out["items"] = to_json_schema(out["items"])
    return out


def tool_specs(functions: Iterable[Mapping[str, Any]]) -> tuple[ToolSpec, ...]:
    return tuple(
        ToolSpec(
            name=str(f["name"]),
            description=str(f.get("description") or ""),
            parameters=f.get("parameters") or {"type": "object", "properties": {}},
        )
        for f in functions
    )


def _messages(question: Any, where: str) -> list[dict[str, str]]:
    if isinstance(question, str):
        return [{"role": "user", "content": question}]
    turn = question[0] if isinstance(question, list) and question else None
    if isinstance(turn, list) and turn and all(isinstance(m, dict) for m in turn):
        msgs = [{"role": str(m["role"]), "content": str(m["content"])} for m in turn]
        if all(m["role"] in ("system", "user") for m in msgs) and msgs[-1]["role"] == "user":
            return msgs
    raise DataError(f"{where}: 'question' must be a string or [[{{role, content}}, ...]].")


def _calls(truth: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(truth, list) or not all(
        isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict)
        for c in truth
    ):
        raise DataError(f"{where}: 'ground_truth' must be a list of {{function: {{arg: [...]}}}}.")
    return [{safe_name(name): args} for c in truth for name, args in c.items()]


def sample_from_record(record: Mapping[str, Any], category: str, source: str) -> Sample:
    """One item. ``source`` names where it came from (for error messages)."""
    where = f"{source}: item {record.get('id')!r}"
    if "id" not in record or "function" not in record or "question" not in record:
        raise DataError(f"{where}: needs 'id', 'question' and 'function'.")
    functions = [
        {**f, "name": safe_name(str(f["name"])), "parameters": to_json_schema(f.get("parameters"))}
        for f in record["function"]
    ]
    messages = _messages(record["question"], where)
    expected = _calls(record.get("ground_truth", []), where)
    names = {f["name"] for f in functions}
    if unknown := [n for c in expected for n in c if n not in names]:
        raise DataError(f"{where}: expected call to {unknown[0]!r}, which is not among its tools.")
    return Sample(
        id=str(record["id"]),
        input=messages[-1]["content"],
        target=json.dumps(expected, sort_keys=True),
        category=category,
        fields={"tools": functions, "messages": messages},
    )


def opening_messages(sample: Sample) -> tuple[ChatMessage, ...]:
    msgs = sample.fields.get("messages") or [{"role": "user", "content": sample.input}]
    return tuple(ChatMessage(role=m["role"], content=m["content"]) for m in msgs)


def spread(samples: list[Sample]) -> list[Sample]:
    """A fixed order shuffled by a hash of the ids, so ``--limit`` takes every category."""
    return sorted(samples, key=lambda s: text_hash(s.id))

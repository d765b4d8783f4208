"""Parsers for JSON Lines / CSV logs with a field mapping, and OpenAI-style chat logs.

Each parser yields a :class:`Raw` record or a :class:`Skip` (reason, location) for every
record it meets, so the importer can account for all of them.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calipers.suites._raw import (
    BadRecord,
    FieldMapping,
    Raw,
    as_bool,
    as_text,
    get_path,
    missing,
    role_of,
)
from calipers.suites._read import read_lines
from calipers.suites._records import ImportReport, Skip

__all__ = ["json_objects", "parse_csv", "parse_jsonl", "parse_openai"]

_GUESS = {
    "input": ("input", "query", "question", "prompt", "user_message", "message", "text"),
    "output": ("output", "response", "answer", "completion", "reply"),
    "id": ("id", "request_id", "req_id", "record_id"),
    "conversation": ("messages", "conversation", "turns"),
    "accepted": ("accepted",),
    "system": ("system", "system_prompt"),
}

Parsed = Iterator[Raw | Skip]


def json_objects(path: Path, report: ImportReport) -> Iterator[tuple[str, int | None, Any]]:
    """``(where, line, value)`` for each record of a JSON Lines file, or of a file holding
    one JSON array; a line that is not JSON yields a BadRecord as its value."""
    lines = read_lines(path, report)
    first = next(((n, t) for n, t in lines if t.strip()), None)
    if first is None:
        return
    if first[1].lstrip().startswith("["):  # one JSON array (line numbers are lost)
        text = "\n".join([first[1], *(t for _n, t in lines)])
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            yield f"line {e.lineno + first[0] - 1} ({e.msg})", e.lineno, BadRecord("broken JSON")
            return
        for i, v in enumerate(doc, start=1):
            yield f"record {i}", None, v
        return
    for n, t in _chain(first, lines):
        if not t.strip():
            continue
        try:
            yield f"line {n}", n, json.loads(t)
        except json.JSONDecodeError as e:
            yield f"line {n} ({e.msg}, column {e.colno})", n, BadRecord("broken JSON line")


def _chain(first: tuple[int, str], rest: Iterator[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    yield first
    yield from rest


def _field(obj: dict[str, Any], mapping: FieldMapping, key: str, *, required: bool) -> Any:
    path = getattr(mapping, key)
    if path is not None:
        value = get_path(obj, path)
        if missing(value) or (required and value in (None, "")):
            if required:
                raise BadRecord(f"missing field {path!r}")
            return None
        return value
    for name in _GUESS[key]:
        if name in obj and obj[name] is not None:
            return obj[name]
    return None


def _messages(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise BadRecord("conversation field is not a JSON list of messages") from None
    if not isinstance(value, list):
        raise BadRecord("conversation field is not a list of messages")
    out = []
    for m in value:
        if not isinstance(m, dict) or "role" not in m:
            raise BadRecord("a message has no role")
        out.append((role_of(m["role"]), as_text(m.get("content"))))
    return out


def _mapped(obj: Any, mapping: FieldMapping, where: str, line: int | None) -> Raw:
    if not isinstance(obj, dict):
        raise BadRecord(f"not a JSON object (a {type(obj).__name__})")
    raw = Raw(where, line)
    conv = _field(obj, mapping, "conversation", required=mapping.conversation is not None)
    if conv is not None:
        raw.messages = _messages(conv)
    else:
        system = _field(obj, mapping, "system", required=False)
        if system:
            raw.messages.append(("system", as_text(system)))
        query = _field(obj, mapping, "input", required=mapping.input is not None)
        if query is None:
            raise BadRecord(
                f"no input field (looked for {', '.join(_GUESS['input'])}; "
                "map yours with --field input=NAME)"
            )
        raw.messages.append(("user", as_text(query)))
    out = _field(obj, mapping, "output", required=False)
    raw.answer = None if out is None else as_text(out)
    rid = _field(obj, mapping, "id", required=False)
    raw.record_id = None if rid is None else str(rid)
    raw.accepted = as_bool(_field(obj, mapping, "accepted", required=False))
    return raw


def parse_jsonl(path: Path, report: ImportReport, mapping: FieldMapping) -> Parsed:
    for where, line, obj in json_objects(path, report):
        try:
            if isinstance(obj, BadRecord):
                raise obj
            yield _mapped(obj, mapping, where, line)
        except BadRecord as e:
            yield Skip(reason=str(e), where=where)


@contextlib.contextmanager
def _big_fields() -> Iterator[None]:
    old = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # enormous messages are capped later
    try:
        yield
    finally:
        csv.field_size_limit(old)


def parse_csv(path: Path, report: ImportReport, mapping: FieldMapping) -> Parsed:
    """CSV with a header row; a row with the wrong number of columns is skipped."""
    reader = csv.reader(t + "\n" for _n, t in read_lines(path, report))
    with _big_fields():
        try:
            header = next(reader)
        except StopIteration:
            return
        end = reader.line_num
        while True:
            start = end + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                end = reader.line_num
                yield Skip(reason="broken CSV row", where=f"line {start} ({e})")
                continue
            end = reader.line_num
            where = f"line {start}"
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                yield Skip(
                    reason="wrong number of columns",
                    where=f"{where} ({len(row)} columns, the header has {len(header)})",
                )
                continue
            try:
                yield _mapped(dict(zip(header, row, strict=True)), mapping, where, start)
            except BadRecord as e:
                yield Skip(reason=str(e), where=where)


def _answer(response: Any) -> str | None:
    if response is None:
        return None
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        raise BadRecord("response is neither text nor an object")
    body = response.get("body", response)  # Batch API output wraps the completion in body
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices:
        if isinstance(body, dict) and "error" in body:
            return None
        raise BadRecord("response has no choices")
    first = choices[0]
    msg = first.get("message") if isinstance(first, dict) else None
    if isinstance(msg, dict):
        return as_text(msg.get("content"))
    if isinstance(first, dict) and isinstance(first.get("text"), str):
        return str(first["text"])
    raise BadRecord("response.choices[0] has no message")


def _openai(obj: Any, mapping: FieldMapping, where: str, line: int | None) -> Raw:
    if not isinstance(obj, dict):
        raise BadRecord(f"not a JSON object (a {type(obj).__name__})")
    request = obj.get("request", obj.get("body", obj))
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise BadRecord("no request.messages list")
    raw = Raw(where, line, messages=_messages(request["messages"]))
    raw.answer = _answer(obj.get("response"))
    rid = get_path(obj, mapping.id) if mapping.id else obj.get("id", obj.get("custom_id"))
    if (missing(rid) or rid is None) and isinstance(obj.get("response"), dict):
        rid = obj["response"].get("id")
    raw.record_id = None if missing(rid) or rid is None else str(rid)
    acc = get_path(obj, mapping.accepted) if mapping.accepted else obj.get("accepted")
    raw.accepted = None if missing(acc) else as_bool(acc)
    return raw


def parse_openai(path: Path, report: ImportReport, mapping: FieldMapping) -> Parsed:
    """Records with ``request.messages`` and ``response.choices[0].message.content``, the flat
    form (``messages`` + ``response``, text or object), and Batch API lines
    (``body.messages``; output ``response.body.choices``)."""
    for where, line, obj in json_objects(path, report):
        try:
            if isinstance(obj, BadRecord):
                raise obj
            yield _openai(obj, mapping, where, line)
        except BadRecord as e:
            yield Skip(reason=str(e), where=where)

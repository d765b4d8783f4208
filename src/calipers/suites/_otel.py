"""OpenTelemetry GenAI spans exported as OTLP JSON (``resourceSpans[].scopeSpans[].spans[]``),
one document or one export per line.

A span's messages are read, in this order, from what the GenAI semantic conventions have used:
the ``gen_ai.input.messages`` / ``gen_ai.output.messages`` attributes (JSON, with ``parts``);
span events ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message`` and ``gen_ai.choice``; flattened ``gen_ai.prompt.N.role`` /
``.content`` and ``gen_ai.completion.N.*`` attributes; ``gen_ai.prompt`` / ``gen_ai.completion``
attributes. Spans of one trace (or one ``gen_ai.conversation.id``) that each carry a single
user message are the turns of one conversation and become one record.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from calipers.suites._raw import BadRecord, FieldMapping, Raw, as_bool, as_text, role_of
from calipers.suites._read import read_lines
from calipers.suites._records import ImportReport, Skip

__all__ = ["otel_attrs", "parse_otel"]

_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _value(v: Any) -> Any:
    """An OTLP ``AnyValue`` (``{"stringValue": ...}``) as a plain value."""
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return otel_attrs(v["kvlistValue"].get("values", []))
    return None


def otel_attrs(attrs: Any) -> dict[str, Any]:
    """OTLP attributes (a list of ``{"key", "value"}``) or a plain mapping, as a dict."""
    if isinstance(attrs, dict):
        return attrs
    if not isinstance(attrs, list):
        return {}
    return {a["key"]: _value(a.get("value")) for a in attrs if isinstance(a, dict) and "key" in a}


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _msgs(value: Any, default_role: str) -> list[tuple[str, str]]:
    value = _json(value)
    if isinstance(value, str):
        return [(default_role, value)]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise BadRecord("GenAI messages are neither text nor a list")
    out = []
    for m in value:
        if not isinstance(m, dict):
            out.append((default_role, as_text(m)))
            continue
        if "message" in m and isinstance(m["message"], dict):  # a choice
            m = m["message"]
        content = m.get("parts", m.get("content"))
        out.append((role_of(m.get("role", default_role)), as_text(content)))
    return out


def _from_events(events: list[Any]) -> tuple[list[tuple[str, str]], str | None]:
    msgs: list[tuple[str, str]] = []
    answer = None
    for ev in events:
        if not isinstance(ev, dict):
            continue
        name, attrs = ev.get("name", ""), otel_attrs(ev.get("attributes"))
        body = _json(attrs.get("gen_ai.event.content", attrs.get("body")))
        content = attrs.get("content", body.get("content") if isinstance(body, dict) else body)
        if name in _EVENT_ROLES:
            msgs.append((_EVENT_ROLES[name], as_text(_json(content))))
        elif name == "gen_ai.choice":
            message = _json(attrs.get("message", body))
            text = message.get("content") if isinstance(message, dict) else content
            answer = as_text(_json(text if text is not None else content))
        elif name == "gen_ai.content.prompt":
            msgs.extend(_msgs(attrs.get("gen_ai.prompt"), "user"))
        elif name == "gen_ai.content.completion":
            got = _msgs(attrs.get("gen_ai.completion"), "assistant")
            answer = got[-1][1] if got else None
    return msgs, answer


def _flattened(attrs: dict[str, Any], prefix: str) -> list[tuple[str, str]]:
    out = []
    i = 0
    while f"{prefix}.{i}.content" in attrs or f"{prefix}.{i}.role" in attrs:
        out.append(
            (
                role_of(attrs.get(f"{prefix}.{i}.role", "user")),
                as_text(attrs.get(f"{prefix}.{i}.content")),
            )
        )
        i += 1
    return out


def _span_messages(span: dict[str, Any]) -> tuple[list[tuple[str, str]], str | None]:
    attrs = otel_attrs(span.get("attributes"))
    if "gen_ai.input.messages" in attrs:
        msgs = _msgs(attrs["gen_ai.input.messages"], "user")
        if "gen_ai.system_instructions" in attrs:
            msgs.insert(0, ("system", as_text(_json(attrs["gen_ai.system_instructions"]))))
        out = _msgs(attrs.get("gen_ai.output.messages", []), "assistant")
        return msgs, (out[0][1] if out else None)
    msgs, answer = _from_events(span.get("events") or [])
    if msgs:
        return msgs, answer
    if "gen_ai.prompt.0.content" in attrs or "gen_ai.prompt.0.role" in attrs:
        comp = _flattened(attrs, "gen_ai.completion")
        return _flattened(attrs, "gen_ai.prompt"), (comp[0][1] if comp else None)
    if "gen_ai.prompt" in attrs:
        comp = (
            _msgs(attrs["gen_ai.completion"], "assistant") if "gen_ai.completion" in attrs else []
        )
        return _msgs(attrs["gen_ai.prompt"], "user"), (comp[-1][1] if comp else None)
    return [], answer


def _is_genai(span: dict[str, Any]) -> bool:
    attrs = otel_attrs(span.get("attributes"))
    return any(k.startswith("gen_ai.") for k in attrs) or any(
        isinstance(e, dict) and str(e.get("name", "")).startswith("gen_ai.")
        for e in span.get("events") or []
    )


def _documents(path: Path, report: ImportReport) -> Iterator[tuple[int | None, Any]]:
    lines = list(read_lines(path, report))
    text = "\n".join(t for _n, t in lines)
    try:
        yield None, json.loads(text)
        return
    except json.JSONDecodeError:
        pass
    for n, t in lines:  # one export per line (the OTLP file exporter)
        if t.strip():
            try:
                yield n, json.loads(t)
            except json.JSONDecodeError:
                yield n, BadRecord("broken JSON line")


def _spans(doc: Any) -> Iterator[dict[str, Any]]:
    docs = doc if isinstance(doc, list) else [doc]
    for d in docs:
        if not isinstance(d, dict):
            continue
        for rs in d.get("resourceSpans", d.get("resource_spans", [])) or []:
            for ss in rs.get("scopeSpans", rs.get("scope_spans", [])) or []:
                yield from (s for s in ss.get("spans", []) or [] if isinstance(s, dict))


def _raw(span: dict[str, Any], where: str, line: int | None, mapping: FieldMapping) -> Raw:
    msgs, answer = _span_messages(span)
    attrs = otel_attrs(span.get("attributes"))
    rid = (
        attrs.get(mapping.id) if mapping.id else span.get("spanId", attrs.get("gen_ai.response.id"))
    )
    acc = as_bool(attrs.get(mapping.accepted or "gen_ai.feedback.accepted"))
    return Raw(
        where,
        line,
        messages=msgs,
        answer=answer,
        accepted=acc,
        record_id=None if rid is None else str(rid),
    )


def _merge(raws: list[Raw]) -> list[Raw]:
    """Spans of one conversation that each carry one user message are its turns."""
    single = all(
        sum(r == "user" for r, _c in x.messages) == 1
        and not any(r == "assistant" for r, _c in x.messages)
        for x in raws
    )
    if len(raws) < 2 or not single:
        return raws
    msgs: list[tuple[str, str]] = [m for m in raws[0].messages if m[0] == "system"]
    for x in raws[:-1]:
        msgs += [m for m in x.messages if m[0] != "system"]
        msgs.append(("assistant", x.answer or ""))
    msgs += [m for m in raws[-1].messages if m[0] != "system"]
    last = raws[-1]
    where = f"{raws[0].where} .. {last.where} ({len(raws)} turns)"
    return [Raw(where, raws[0].line, msgs, last.answer, last.accepted, last.record_id)]


def parse_otel(path: Path, report: ImportReport, mapping: FieldMapping) -> Iterator[Raw | Skip]:
    groups: dict[str, list[tuple[int, Raw]]] = defaultdict(list)
    k = 0
    for line, doc in _documents(path, report):
        if isinstance(doc, BadRecord):
            yield Skip(reason=str(doc), where=f"line {line}")
            continue
        for span in _spans(doc):
            k += 1
            sid = str(span.get("spanId", ""))[:16]
            where = f"span {k}" + (f" ({sid})" if sid else "") + (f" line {line}" if line else "")
            if not _is_genai(span):
                yield Skip(reason="not a GenAI span (no gen_ai.* attributes)", where=where)
                continue
            try:
                raw = _raw(span, where, line, mapping)
            except BadRecord as e:
                yield Skip(reason=str(e), where=where)
                continue
            attrs = otel_attrs(span.get("attributes"))
            key = attrs.get("gen_ai.conversation.id") or span.get("traceId") or f"#{k}"
            start = int(span.get("startTimeUnixNano", 0) or 0)
            groups[str(key)].append((start, raw))
    n_spans = n_convs = 0
    for items in groups.values():
        merged = _merge([r for _s, r in sorted(items, key=lambda x: x[0])])
        if len(merged) < len(items):
            n_spans, n_convs = n_spans + len(items), n_convs + 1
        yield from merged
    if n_convs:
        report.notes.append(
            f"{n_spans} spans were the turns of {n_convs} conversation(s) "
            "(one user message each, same trace or conversation id): each "
            "conversation is one record."
        )

"""RAG traces -> RAG rows (the layout :func:`calipers.tasks.rag.read_rag_file` reads by default).

Two sources of production RAG requests:

- **OTel spans** (OTLP JSON, as ``calipers suite import`` reads them). The retrieved documents
  are read from a span's attributes in either layout: the GenAI semantic conventions'
  ``gen_ai.retrieval.documents`` (a list, or its JSON text, of ``{id, score, content|text}``;
  documents recorded with only an id and score carry no text and are left out) with the query
  in ``gen_ai.retrieval.query.text``; or OpenInference's flattened
  ``retrieval.documents.N.document.{id,content,score}`` with the query in ``input.value``.
  The spans of one trace are one request: its documents (in span order), the question (the
  retrieval query, else the last user message of its GenAI span) and the model's answer.
- **Gateway traffic**: a request sent through the calipers gateway may carry its passages in
  its JSON body as ``"calipers_rag": {"passages": [{"id", "title", "text"}], "question": ...}``
  (``question`` optional: the bare question when the user message also holds the context;
  else the last user message). The gateway keeps it in the traffic record's ``request``.
  One row per request (``pair_id``), with the answer the user was served.

Traces carry no gold labels: every passage is ``kind="retrieved"`` (``gold`` false) and the
answer is unknown (``answer_unknown``). What can be measured on them: abstention, whether the
recorded or a new answer is supported by the passages (the unsupported-answer rate), claim
faithfulness by a calibrated judge, and how these move when the passages are degraded (noise,
order, context fill) — not correctness.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from calipers.store import RAG_FIELD, RagContext, rag_of
from calipers.suites._otel import _documents, _span_messages, _spans, otel_attrs
from calipers.suites._records import ImportReport
from calipers.tasks.rag import RagFields, rag_samples_from_rows
from calipers.types import Sample

__all__ = [
    "RAG_KEY",
    "rag_items_from_otel",
    "rag_items_from_traffic",
    "rag_records_from_otel",
    "rag_records_from_traffic",
    "span_documents",
    "write_rag_jsonl",
]

RAG_KEY = RAG_FIELD  # the gateway convention (calipers.store): "calipers_rag"
"""The request-body key a RAG request's passages travel under through the gateway."""

_KEEP = RagFields(keep=["response", "source", "model"])


def _as_list(v: Any) -> list[Any]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            return []
    return v if isinstance(v, list) else []


def _doc(d: Any) -> dict[str, Any] | None:
    if not isinstance(d, dict):
        return None
    d = d.get("document", d) if isinstance(d.get("document"), dict) else d
    text = d.get("content", d.get("text", d.get("document.content")))
    if not isinstance(text, str) or not text.strip():
        return None
    out: dict[str, Any] = {"text": text}
    pid = d.get("id", d.get("document.id"))
    if pid is not None:
        out["id"] = str(pid)
    if isinstance(d.get("title"), str):
        out["title"] = d["title"]
    return out


def span_documents(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    """The retrieved documents a span's attributes record, in either layout (with text)."""
    docs = _as_list(attrs.get("gen_ai.retrieval.documents")) or _as_list(
        attrs.get("retrieval.documents")
    )
    if not docs:
        i = 0
        while any(k.startswith(f"retrieval.documents.{i}.") for k in attrs):
            pre = f"retrieval.documents.{i}.document."
            docs.append({k[len(pre) :]: v for k, v in attrs.items() if k.startswith(pre)})
            i += 1
    return [x for x in (_doc(d) for d in docs) if x is not None]


def _trace_row(tid: str, spans: list[dict[str, Any]]) -> dict[str, Any] | None:
    passages: list[dict[str, Any]] = []
    question = answer = None
    for span in sorted(spans, key=lambda s: int(s.get("startTimeUnixNano", 0) or 0)):
        attrs = otel_attrs(span.get("attributes"))
        found = span_documents(attrs)
        if found:
            passages += found
            q = attrs.get("gen_ai.retrieval.query.text", attrs.get("input.value"))
            question = q if isinstance(q, str) and q.strip() else question
            continue
        msgs, out = _span_messages(span)
        users = [c for r, c in msgs if r == "user" and c.strip()]
        if users and question is None:
            question = users[-1]
        answer = out if out is not None else answer
    if not passages or not question:
        return None
    return {"id": tid, "question": question, "passages": passages, "answers": [],
            "answer_unknown": True, "response": answer, "source": "otel"}  # fmt: skip


def rag_records_from_otel(path: str | Path) -> tuple[list[dict[str, Any]], ImportReport]:
    """RAG rows from an OTLP JSON file: one per trace that recorded retrieved documents with
    text and a question; the report counts the traces skipped and why."""
    p = Path(path)
    report = ImportReport(file=str(p), sha256="", format="otel-rag")
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line, doc in _documents(p, report):
        if not isinstance(doc, dict | list):
            report.skip(str(doc), f"line {line}")
            continue
        for k, span in enumerate(_spans(doc)):
            traces[str(span.get("traceId") or f"line {line} span {k}")].append(span)
    rows = []
    for tid, spans in traces.items():
        report.n_read += 1
        row = _trace_row(tid, spans)
        if row is None:
            report.skip("no retrieved documents with text, or no question", f"trace {tid}")
        else:
            rows.append(row)
    report.n_imported = len(rows)
    return rows, report


def _last_user(request: dict[str, Any]) -> str | None:
    for m in reversed(request.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):  # content parts
                c = " ".join(str(x.get("text", "")) for x in c if isinstance(x, dict))
            return c if isinstance(c, str) else None
    p = request.get("prompt")
    return p if isinstance(p, str) else None


def rag_records_from_traffic(records: Iterable[Any]) -> list[dict[str, Any]]:
    """RAG rows from gateway traffic records (``TrafficRecord`` or any object with
    ``pair_id``, ``served``, ``request``, ``response``, ``model``): one per request that
    carries ``calipers_rag`` passages, with the answer the user was served."""
    by_pair: dict[str, tuple[Any, RagContext]] = {}
    for r in records:
        rag = rag_of(r.request) if isinstance(r.request, dict) else None
        if rag is not None and (r.pair_id not in by_pair or r.served):
            by_pair[r.pair_id] = (r, rag)
    rows = []
    for pair, (r, rag) in by_pair.items():
        passages = [d for d in (_doc(p.model_dump()) for p in rag.passages) if d]
        question = rag.question or _last_user(r.request)
        if passages and isinstance(question, str) and question.strip():
            rows.append({"id": pair, "question": question, "passages": passages, "answers": [],
                         "answer_unknown": True, "response": r.response, "source": "gateway",
                         "model": r.model})  # fmt: skip
    return rows


def rag_items_from_otel(path: str | Path) -> list[Sample]:
    """:func:`rag_records_from_otel` as RAG items (``response``, ``source`` in metadata)."""
    rows, _report = rag_records_from_otel(path)
    return rag_samples_from_rows(((f"{path} trace {r['id']}", r) for r in rows), _KEEP)


def rag_items_from_traffic(records: Iterable[Any]) -> list[Sample]:
    """:func:`rag_records_from_traffic` as RAG items."""
    rows = rag_records_from_traffic(records)
    return rag_samples_from_rows(((f"request {r['id']}", r) for r in rows), _KEEP)


def write_rag_jsonl(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write RAG rows as JSON Lines (what ``read_rag_file`` and a ``rag:`` task spec read);
    returns the number written."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n

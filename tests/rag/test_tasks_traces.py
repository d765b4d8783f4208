"""RAG traces (OTel spans, gateway traffic) -> RAG rows -> the file loader's items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calipers.store import TrafficRecord
from calipers.suites import (
    RAG_KEY,
    rag_items_from_otel,
    rag_items_from_traffic,
    rag_records_from_otel,
    rag_records_from_traffic,
    write_rag_jsonl,
)
from calipers.tasks.rag import passages_of, read_rag_file


def _kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]


def _otlp() -> dict[str, Any]:
    genai_docs = [
        {"id": "d1", "score": 0.9, "content": "Ostrelby has 4,200 residents."},
        {"id": "d2", "score": 0.5, "content": "Ostrelby lies on the Sallow River."},
    ]
    spans = [
        {  # trace A: GenAI semconv retrieval span, then the inference span
            "traceId": "A", "spanId": "1", "startTimeUnixNano": "1",
            "attributes": _kv({
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "How many people live in Ostrelby?",
                "gen_ai.retrieval.documents": json.dumps(genai_docs),
            }),
        },
        {
            "traceId": "A", "spanId": "2", "startTimeUnixNano": "2",
            "attributes": _kv({
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "content": "Context: ... Question: how many?"}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "content": "About 4,200."}]
                ),
            }),
        },
        {  # trace B: OpenInference retriever span (flattened), no inference span
            "traceId": "B", "spanId": "3", "startTimeUnixNano": "1",
            "attributes": _kv({
                "openinference.span.kind": "RETRIEVER",
                "input.value": "Who is the mayor of Ostrelby?",
                "retrieval.documents.0.document.id": "m1",
                "retrieval.documents.0.document.content": "Mayor Vesna Korl opened the bridge.",
                "retrieval.documents.1.document.content": "The bridge cost a lot.",
            }),
        },
        {  # trace C: documents recorded by id and score only: nothing to show a model
            "traceId": "C", "spanId": "4",
            "attributes": _kv({
                "gen_ai.retrieval.documents": json.dumps([{"id": "x", "score": 0.1}]),
                "gen_ai.retrieval.query.text": "q",
            }),
        },
    ]  # fmt: skip
    return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}


def test_otel_traces_become_rag_rows_the_file_loader_reads(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_otlp()), encoding="utf-8")
    rows, report = rag_records_from_otel(path)
    assert [r["id"] for r in rows] == ["A", "B"]
    assert report.n_read == 3 and report.n_imported == 2 and sum(report.skipped.values()) == 1
    a, b = rows
    assert a["question"] == "How many people live in Ostrelby?"
    assert a["response"] == "About 4,200."
    assert [p["id"] for p in a["passages"]] == ["d1", "d2"]
    assert b["question"] == "Who is the mayor of Ostrelby?" and b["response"] is None
    assert [p["text"] for p in b["passages"]] == [
        "Mayor Vesna Korl opened the bridge.",
        "The bridge cost a lot.",
    ]
    out = tmp_path / "rag.jsonl"
    assert write_rag_jsonl(rows, out) == 2
    from_file = read_rag_file(out)
    assert [s.model_dump(exclude={"metadata"}) for s in from_file] == [
        s.model_dump(exclude={"metadata"}) for s in rag_items_from_otel(path)
    ]
    s = from_file[0]
    assert s.metadata["answer_unknown"] and not s.metadata["unanswerable"] and s.target is None
    assert all(p.kind == "retrieved" and not p.gold for p in passages_of(s))
    assert [p.id for p in passages_of(from_file[1])] == ["m1", "B/1"]


def _record(pair: str, role: str, served: bool, request: dict[str, Any], answer: str) -> Any:
    return TrafficRecord(
        pair_id=pair, role=role, served=served, mode="shadow", endpoint="/v1/chat/completions",
        upstream="u", request=request, response=answer, model=f"m-{role}",
    )  # fmt: skip


def test_gateway_traffic_with_passages_becomes_rag_items() -> None:
    rag: dict[str, Any] = {
        "passages": [{"id": "k1", "title": "FAQ", "text": "Refunds take 5 days."}]
    }
    req: dict[str, Any] = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "How long do refunds take?"},
        ],
        RAG_KEY: rag,
    }
    plain = {"messages": [{"role": "user", "content": "hi"}]}
    asked = {**req, RAG_KEY: {**rag, "question": "Refund time?"}}
    records = [
        _record("p1", "baseline", True, req, "5 days."),
        _record("p1", "candidate", False, req, "A week."),
        _record("p2", "baseline", True, plain, "hello"),
        _record("p3", "candidate", True, asked, "I don't know."),
    ]  # fmt: skip
    rows = rag_records_from_traffic(records)
    assert [(r["id"], r["question"], r["response"], r["model"]) for r in rows] == [
        ("p1", "How long do refunds take?", "5 days.", "m-baseline"),
        ("p3", "Refund time?", "I don't know.", "m-candidate"),
    ]
    (s, _s3) = rag_items_from_traffic(records)
    (p,) = passages_of(s)
    assert (p.id, p.title, p.text, p.kind, p.gold) == (
        "k1",
        "FAQ",
        "Refunds take 5 days.",
        "retrieved",
        False,
    )
    assert s.metadata["response"] == "5 days." and s.metadata["source"] == "gateway"

"""Importers: JSONL/CSV with a field mapping, OpenAI chat logs, OpenTelemetry GenAI spans.
Every bad record is counted with its reason and line; the counts were worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calipers.suites import FieldMapping, detect_format, import_file
from tests.suites._logs import attr, event, otlp, span, write_jsonl

MAP = FieldMapping(input="question", output="answer", id="id", accepted="accepted")


def _mixed_jsonl(tmp_path: Path) -> Path:
    conv = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "track my parcel"},
    ]
    rows: list[object] = [
        {
            "id": "a1",
            "question": "how do I reset my password",
            "answer": "Use the link",
            "accepted": True,
        },  # 1
        {"id": "a2", "question": "refund for order 17", "answer": "Done"},  # 2
        '{"id": "a3", "question": broken',  # 3 broken JSON
        "",  # 4 blank: not a record
        {"id": "a3", "answer": "no question here"},  # 5 missing field
        [1, 2],  # 6 not an object
        {"id": "a4", "question": "   "},  # 7 empty query
        "CP1252",  # 8 cp1252 bytes
        {"id": "a6", "question": "x" * 1_000_000},  # 9 1 MB message
        {"id": "a7", "conversation": conv, "answer": "on its way"},  # 10 multi-turn
        {"id": "a8", "question": "mail me at jane.roe@example.org"},  # 11 secret
        {"id": "a9", "conversation": [{"role": "wizard", "content": "x"}]},  # 12 bad role
    ]
    p = write_jsonl(tmp_path / "log.jsonl", rows)
    data = p.read_bytes().replace(b"CP1252", b'{"id": "a5", "question": "caf\xe9 au lait"}')
    p.write_bytes(data)
    return p


def test_jsonl_counts_every_record(tmp_path: Path) -> None:
    records, rep = import_file(_mixed_jsonl(tmp_path), mapping=MAP)
    assert rep.format == "jsonl"
    assert (rep.n_read, rep.n_imported, rep.n_skipped) == (11, 6, 5)
    assert rep.n_read == rep.n_imported + rep.n_skipped  # nothing dropped silently
    assert rep.skipped == {
        "broken JSON line": 1,
        "missing field 'question'": 1,
        "not a JSON object (a list)": 1,
        "empty user message": 1,
        "unknown message role 'wizard'": 1,
    }
    where = {s.reason: s.where.split(" (")[0] for s in rep.skips}
    assert where == {
        "broken JSON line": "line 3",
        "missing field 'question'": "line 5",
        "not a JSON object (a list)": "line 6",
        "empty user message": "line 7",
        "unknown message role 'wizard'": "line 12",
    }
    assert [r.source.line for r in records] == [1, 2, 8, 9, 10, 11]
    assert (rep.n_truncated, rep.truncated_at) == (1, ["line 9"])
    assert (rep.n_fallback_decoded, rep.fallback_lines) == (1, [8])
    assert rep.redactions == {"EMAIL": 1} and rep.redacted_at == ["line 11"]
    by_id = {r.source.record_id: r for r in records}
    assert by_id["a5"].query == "café au lait"
    assert len(by_id["a6"].query) == 32_000 and by_id["a6"].truncated
    assert [t.role for t in by_id["a7"].turns] == ["user", "assistant", "user"]
    assert by_id["a7"].query == "track my parcel" and by_id["a7"].answer == "on its way"
    assert by_id["a1"].accepted is True and by_id["a2"].accepted is None
    assert by_id["a8"].query == "mail me at [EMAIL]"


def test_enormous_messages_can_be_skipped_instead(tmp_path: Path) -> None:
    _records, rep = import_file(_mixed_jsonl(tmp_path), mapping=MAP, max_chars=1000, on_long="skip")
    assert rep.skipped["message longer than 1,000 characters"] == 1
    assert (rep.n_imported, rep.n_truncated) == (5, 0)


def test_csv_with_multiline_fields_bad_rows_and_cp1252(tmp_path: Path) -> None:
    p = tmp_path / "log.csv"
    p.write_bytes(
        b"id,question,answer,thumbs_up\n"
        b"q1,how do I get a refund,Sure,yes\n"  # 2
        b'q2,"multi\nline question about shipping",ok,no\n'  # 3-4
        b"q3,only two\n"  # 5 wrong number of columns
        b"q4,caf\xe9 question,x,\n"  # 6 cp1252
        b"q5,,x,yes\n"  # 7 empty question
    )
    mapping = FieldMapping(input="question", output="answer", id="id", accepted="thumbs_up")
    records, rep = import_file(p, mapping=mapping)
    assert rep.format == "csv"
    assert (rep.n_read, rep.n_imported) == (5, 3)
    assert rep.skipped == {"wrong number of columns": 1, "missing field 'question'": 1}
    assert [s.where.split(" (")[0] for s in rep.skips] == ["line 5", "line 7"]
    assert [r.source.line for r in records] == [2, 3, 6]
    assert records[1].query == "multi\nline question about shipping"
    assert [r.accepted for r in records] == [True, False, None]
    assert records[2].query == "café question" and rep.fallback_lines == [6]


def test_openai_logs_keep_turns_and_answers(tmp_path: Path) -> None:
    rows = [
        {
            "id": "chatcmpl-1",
            "accepted": True,
            "request": {
                "model": "m",
                "messages": [
                    {"role": "system", "content": "You are support."},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "Hello!"},
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "where is my parcel"},
                            {"type": "image_url", "image_url": {"url": "x"}},
                        ],
                    },
                ],
            },
            "response": {
                "choices": [{"message": {"role": "assistant", "content": "It ships today."}}]
            },
        },
        {"messages": [{"role": "user", "content": "cancel my plan"}], "response": "Done."},
        {
            "custom_id": "b-1",
            "body": {"messages": [{"role": "user", "content": "refund"}]},
            "response": {"body": {"choices": [{"message": {"content": "OK"}}]}},
        },
        {"request": {"messages": "oops"}},
        {"request": {"messages": [{"role": "assistant", "content": "only me"}]}},
    ]
    p = write_jsonl(tmp_path / "chat.jsonl", rows)
    assert detect_format(p) == "openai"
    records, rep = import_file(p)
    assert (rep.n_read, rep.n_imported) == (5, 3)
    assert rep.skipped == {"no request.messages list": 1, "no user message": 1}
    first = records[0]
    assert [(t.role, t.content) for t in first.turns] == [
        ("system", "You are support."),
        ("user", "hi"),
        ("assistant", "Hello!"),
        ("user", "where is my parcel"),
    ]
    assert (first.answer, first.accepted, first.source.record_id) == (
        "It ships today.",
        True,
        "chatcmpl-1",
    )
    assert (records[1].answer, records[2].answer) == ("Done.", "OK")
    assert records[2].source.record_id == "b-1"


def _otel_doc() -> dict[str, object]:
    t2 = [  # three turns of one conversation, listed out of order
        span(
            "s3",
            "T2",
            300,
            {"gen_ai.operation.name": "chat"},
            [
                event("gen_ai.user.message", {"content": "and the third?"}),
                event("gen_ai.choice", {"message": json.dumps({"content": "a3"})}),
            ],
        ),
        span(
            "s2",
            "T2",
            200,
            {"gen_ai.operation.name": "chat"},
            [
                event("gen_ai.user.message", {"content": "second question"}),
                event("gen_ai.choice", {"message": json.dumps({"content": "a2"})}),
            ],
        ),
        span(
            "s4",
            "T2",
            100,
            {"gen_ai.operation.name": "chat"},
            [
                event("gen_ai.user.message", {"content": "first question"}),
                event("gen_ai.choice", {"message": json.dumps({"content": "a1"})}),
            ],
        ),
    ]
    return otlp(
        [
            span(
                "s1",
                "T1",
                1,
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(
                        [
                            {
                                "role": "user",
                                "parts": [{"type": "text", "content": "reset my password"}],
                            }
                        ]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": "Click the link"}],
                            }
                        ]
                    ),
                },
            ),
            *t2,
            span(
                "s5",
                "T3",
                5,
                {
                    "gen_ai.prompt.0.role": "system",
                    "gen_ai.prompt.0.content": "Be brief",
                    "gen_ai.prompt.1.role": "user",
                    "gen_ai.prompt.1.content": "refund to card 4111 1111 1111 1111",
                    "gen_ai.completion.0.content": "Pending",
                },
            ),
            span("s6", "T3", 6, {"http.method": "POST"}),
            span(
                "s7",
                "T4",
                7,
                {
                    "gen_ai.prompt": "plain text prompt",
                    "gen_ai.completion": "done",
                    "gen_ai.feedback.accepted": True,
                },
            ),
        ]
    )


def test_otel_spans_and_conversations(tmp_path: Path) -> None:
    p = tmp_path / "traces.json"
    p.write_text(json.dumps(_otel_doc(), indent=2))
    assert detect_format(p) == "otel"
    records, rep = import_file(p)
    assert (rep.n_read, rep.n_imported) == (5, 4)
    assert rep.skipped == {"not a GenAI span (no gen_ai.* attributes)": 1}
    assert rep.redactions == {"CARD": 1}
    by_query = {r.query: r for r in records}
    assert by_query["reset my password"].answer == "Click the link"
    conv = by_query["and the third?"]
    assert [(t.role, t.content) for t in conv.turns] == [
        ("user", "first question"),
        ("assistant", "a1"),
        ("user", "second question"),
        ("assistant", "a2"),
        ("user", "and the third?"),
    ]
    assert conv.answer == "a3" and any("3 spans" in n for n in rep.notes)
    flat = by_query["refund to card [CARD]"]
    assert [t.role for t in flat.turns] == ["system", "user"] and flat.answer == "Pending"
    plain = by_query["plain text prompt"]
    assert (plain.answer, plain.accepted) == ("done", True)


def test_otel_one_export_per_line_with_a_broken_line(tmp_path: Path) -> None:
    one = otlp([span("a", "X", 1, {"gen_ai.prompt": "first"})])
    two = otlp([span("b", "Y", 2, {"gen_ai.prompt": "second"})])
    p = write_jsonl(tmp_path / "traces.jsonl", [one, "{not json", two])
    records, rep = import_file(p, fmt="otel")
    assert [r.query for r in records] == ["first", "second"]
    assert rep.skipped == {"broken JSON line": 1} and rep.skips[0].where == "line 2"
    assert [r.source.line for r in records] == [1, 3]


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("a.csv", "q\nx\n", "csv"),
        ("a.jsonl", '{"question": "x"}\n', "jsonl"),
        ("a.jsonl", '{"request": {"messages": []}, "response": null}\n', "openai"),
        ("a.json", '{"resourceSpans": []}', "otel"),
    ],
)
def test_detect_format(tmp_path: Path, name: str, content: str, fmt: str) -> None:
    p = tmp_path / name
    p.write_text(content)
    assert detect_format(p) == fmt


def test_otel_attributes_read_from_plain_mappings_too(tmp_path: Path) -> None:
    doc = otlp([{"traceId": "Z", "spanId": "z", "attributes": {"gen_ai.prompt": "hello"}}])
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    records, _rep = import_file(p)
    assert records[0].query == "hello"
    assert attr("k", 1)["value"] == {"intValue": "1"}

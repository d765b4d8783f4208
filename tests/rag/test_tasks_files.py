"""The user's own RAG data: JSONL/CSV rows through a field mapping, in a task spec's `rag:`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import DataError, TaskSpecError
from calipers.tasks import LoadContext
from calipers.tasks._spec import load_task_spec
from calipers.tasks.rag import (
    RAG_INSTRUCTION,
    RagFields,
    is_rag_task,
    passages_of,
    read_rag_file,
)

ROWS: list[dict[str, Any]] = [
    {
        "id": "a",
        "question": "Who wrote Hamlet?",
        "answers": ["Shakespeare", "William Shakespeare"],
        "passages": [
            {
                "id": "p1",
                "title": "Hamlet",
                "text": "Hamlet is a play by Shakespeare.",
                "gold": True,
            },
            {"text": "Macbeth is a tragedy."},
        ],
    },
    {"question": "Who wrote Ulysses?", "answers": [], "unanswerable": True, "passages": ["Nope."]},
]


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]], name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def test_default_layout(tmp_path: Path) -> None:
    a, b = read_rag_file(_jsonl(tmp_path, ROWS))
    assert (a.id, a.target, a.metadata["answers"]) == ("a", "Shakespeare", ROWS[0]["answers"])
    p1, p2 = passages_of(a)
    assert (p1.id, p1.title, p1.gold, p1.kind) == ("p1", "Hamlet", True, "gold")
    assert (p2.id, p2.gold, p2.kind) == ("a/1", False, "retrieved")
    assert a.fields["context"] == (
        "[1] Hamlet\nHamlet is a play by Shakespeare.\n\n[2]\nMacbeth is a tragedy."
    )
    assert b.id == "1" and b.metadata["unanswerable"] and b.target is None
    assert passages_of(b)[0].text == "Nope."


def test_csv_with_a_mapping(tmp_path: Path) -> None:
    ctx = json.dumps([{"body": "Paris is the capital of France.", "is_gold": "yes"}])
    p = tmp_path / "d.csv"
    p.write_text(
        "qid,query,gold_answers,contexts,no_answer,topic\n"
        f'7,Capital of France?,Paris|paris city,"{ctx.replace(chr(34), chr(34) * 2)}",no,geo\n',
        encoding="utf-8",
    )
    fields = RagFields(
        id="qid",
        question="query",
        answers="gold_answers",
        passages="contexts",
        text="body",
        gold="is_gold",
        unanswerable="no_answer",
        category="topic",
        keep=["topic"],
    )
    (s,) = read_rag_file(p, fields)
    assert (s.id, s.input, s.category) == ("7", "Capital of France?", "geo")
    assert s.metadata["answers"] == ["Paris", "paris city"] and s.metadata["topic"] == "geo"
    assert passages_of(s)[0].gold


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"answers": ["x"], "passages": []}, r"d\.jsonl:2: no question"),
        (
            {"question": "q", "answers": ["x"], "passages": [{"title": "t"}]},
            "passage 1 has no text",
        ),
        ({"question": "q", "passages": []}, "marked neither unanswerable"),
        ({"question": "q", "answers": ["x"], "unanswerable": 1, "passages": []}, "but has answers"),
        ({"question": "q", "answers": "x", "unanswerable": "maybe", "passages": []}, "'maybe'"),
        ({"question": "q", "answers": "x", "passages": "text"}, "must be a list of passages"),
        ({"id": "a", "question": "q", "answers": "x", "passages": []}, "duplicate item id 'a'"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path: Path, row: dict[str, object], message: str) -> None:
    with pytest.raises(DataError, match=message):
        read_rag_file(_jsonl(tmp_path, [ROWS[0], row]))


def test_answer_unknown_rows(tmp_path: Path) -> None:
    (s,) = read_rag_file(_jsonl(tmp_path, [{"question": "q", "answer_unknown": True,
                                            "passages": ["t"]}]))  # fmt: skip
    assert s.metadata["answer_unknown"] and s.target is None and not s.metadata["unanswerable"]


def test_task_spec_rag_section(tmp_path: Path) -> None:
    _jsonl(tmp_path, [{**r, "q": r["question"]} for r in ROWS])
    spec = tmp_path / "t.yaml"
    spec.write_text("name: mine\ndata: d.jsonl\nrag: {question: q}\n", encoding="utf-8")
    task = load_task_spec(spec)
    assert is_rag_task(task) and task.tags == ("rag", "file")
    assert [s.spec.name for s in task.scorers] == ["rag_outcome"]
    assert task.prompt.instruction == RAG_INSTRUCTION and task.params.max_tokens == 64
    items = task.load(LoadContext())
    assert [s.input for s in items] == ["Who wrote Hamlet?", "Who wrote Ulysses?"]


def test_task_spec_rag_errors(tmp_path: Path) -> None:
    _jsonl(tmp_path, [{"question": "q", "passages": []}])
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\ndata: d.jsonl\nrag: {}\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"d\.jsonl:1: no answer"):
        load_task_spec(spec)
    spec.write_text("name: t\ndata: d.jsonl\nrag: {}\nfields: {input: q}\n", encoding="utf-8")
    with pytest.raises(TaskSpecError, match="remove `fields:`"):
        load_task_spec(spec)
    spec.write_text("name: t\ndata: d.jsonl\nrag: {questoin: q}\n", encoding="utf-8")
    with pytest.raises(TaskSpecError, match=r"t\.yaml:3: field 'rag.questoin'"):
        load_task_spec(spec)

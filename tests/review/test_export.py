"""Exports of final labels, parsed back (json, csv) and checked field by field against the
planted answers; the suite export read back through calipers.suites; the CLI with --json."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.review import (
    export_argilla,
    export_csv,
    export_jsonl,
    export_label_studio,
    review_report,
)
from calipers.store import Store
from tests.review.test_report import make_campaign, rate_all, store

__all__ = ["store"]  # the fixture

Q = [
    {"id": "ok", "type": "pass_fail", "prompt": "Correct?"},
    {"id": "quality", "type": "likert", "prompt": "How good?"},
]
VOTES = {  # item -> the three raters' ok answers
    "i000": (True, True, True),
    "i001": (True, False, False),
    "i002": (False, False, False),
    "i003": (True, True, False),
}
RATERS = ("r0", "r1", "r2")


def answer(item: str, rater: str, _swapped: bool | None) -> dict[str, Any]:
    ok = VOTES[item][RATERS.index(rater)]
    return {"ok": ok, "quality": 4 if ok else 2}


@pytest.fixture
def labelled(store: Store) -> Store:
    make_campaign(store, 4, k=3, questions=Q)
    rate_all(store, dict.fromkeys(RATERS, "default"), answer)
    store.add_rater("c", "boss", token_hash="hash-boss", role="adjudicator")
    from datetime import UTC, datetime

    store.adjudicate("c", "i003", "boss", {"ok": False}, note="wrong", now=datetime.now(UTC))
    return store


def expected_ok(item: str) -> tuple[bool, str, str | None]:
    if item == "i003":
        return False, "adjudicated", "boss"
    votes = Counter(VOTES[item])
    value, n = votes.most_common(1)[0]
    return value, "unanimous" if n == 3 else "majority", None


def test_jsonl_rows_field_by_field(labelled: Store) -> None:
    report = review_report(labelled, "c")
    rows = [
        json.loads(line)
        for line in export_jsonl(report, labelled.get_review_items("c")).splitlines()
    ]
    ok = {r["item_key"]: r for r in rows if r["question"] == "ok"}
    assert sorted(ok) == sorted(VOTES)
    for item, row in ok.items():
        value, provenance, by = expected_ok(item)
        assert (row["value"], row["provenance"], row["by"]) == (value, provenance, by)
        assert row["n_judgments"] == 3 and row["campaign"] == "c"
        assert sum(row["votes"].values()) == 3
        assert row["payload"]["response"] == f"R{int(item[1:])}"
    assert {r["question"] for r in rows} == {"ok", "quality"}


def test_csv_parsed_back(labelled: Store) -> None:
    report = review_report(labelled, "c")
    rows = list(csv.DictReader(io.StringIO(export_csv(report, "ok"))))
    assert len(rows) == 4
    for row in rows:
        value, provenance, by = expected_ok(row["item_key"])
        assert row["question"] == "ok"
        assert row["value"] == ("pass" if value else "fail")
        assert row["provenance"] == provenance and row["by"] == (by or "")
        assert json.loads(row["votes"]) == {
            json.dumps(v): c for v, c in Counter(VOTES[row["item_key"]]).items()
        }


def test_label_studio_tasks(labelled: Store) -> None:
    report = review_report(labelled, "c")
    tasks = export_label_studio(report, labelled.get_review_items("c"))
    tasks = json.loads(json.dumps(tasks))
    assert len(tasks) == 4
    by = {t["data"]["item_key"]: t for t in tasks}
    t = by["i001"]
    assert t["data"] == {"item_key": "i001", "prompt": "P1", "response": "R1"}
    (ann,) = t["annotations"]
    regions = {r["from_name"]: r for r in ann["result"]}
    assert regions["ok"] == {
        "from_name": "ok",
        "to_name": "response",
        "type": "choices",
        "value": {"choices": ["fail"]},
    }
    assert regions["quality"]["type"] == "rating"
    assert regions["quality"]["value"] == {"rating": 2}
    assert ann["ground_truth"] is False and ann["meta"]["provenance"]["ok"] == "majority"
    assert by["i003"]["annotations"][0]["ground_truth"] is True
    assert by["i003"]["annotations"][0]["meta"]["adjudicated_by"] == {"ok": "boss"}


def test_argilla_records(labelled: Store) -> None:
    report = review_report(labelled, "c")
    records = json.loads(json.dumps(export_argilla(report, labelled.get_review_items("c"), "ok")))
    by = {r["id"]: r for r in records}
    assert set(by) == set(VOTES)
    rec = by["i003"]
    assert rec["fields"] == {"prompt": "P3", "response": "R3"}
    assert rec["metadata"] == {"campaign": "c", "ok_provenance": "adjudicated"}
    assert rec["suggestions"] == [
        {
            "question_name": "ok",
            "value": "fail",
            "type": "human",
            "agent": "calipers:adjudicated:boss",
        }
    ]


def test_suite_export_gives_approved_answers_as_references(
    labelled: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from calipers.review import export_suite
    from calipers.suites import load_suite

    monkeypatch.setenv("CALIPERS_HOME", str(tmp_path / "home"))
    report = review_report(labelled, "c")
    result = export_suite(report, labelled.get_review_items("c"), "approved", "ok")
    _manifest, items = load_suite("approved")
    passed = [k for k in VOTES if expected_ok(k)[0]]
    assert result.manifest.n_items == len(passed) == len(items)
    refs = sorted((i.query, i.reference) for i in items)
    assert refs == sorted((f"P{int(k[1:])}", f"R{int(k[1:])}") for k in passed)


def test_cli_report_json_and_export(labelled: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'review.db'}"
    runner = CliRunner()
    out = runner.invoke(cli, ["review", "report", "c", "--store", url, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["campaign"] == "c"
    ok = next(q for q in data["questions"] if q["id"] == "ok")
    assert ok["provenance"] == {"unanimous": 2, "majority": 1, "adjudicated": 1}
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    out = runner.invoke(
        cli, ["review", "report", "c", "--store", url, "--html", str(html), "--markdown", str(md)]
    )
    assert out.exit_code == 0, out.output
    assert "Agreement" in out.output
    assert "<script" not in html.read_text() and "## Final labels" in md.read_text()
    out = runner.invoke(cli, ["review", "export", "c", "--store", url, "--format", "csv"])
    assert out.exit_code == 0, out.output
    assert len(list(csv.DictReader(io.StringIO(out.output)))) == 8


def test_label_studio_config_names_every_region(labelled: Store, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    url = f"sqlite:///{tmp_path / 'review.db'}"
    conf, out = tmp_path / "config.xml", tmp_path / "tasks.json"
    args = ["review", "export", "c", "--store", url, "--format", "label-studio"]
    res = CliRunner().invoke(cli, [*args, "--out", str(out), "--label-config", str(conf)])
    assert res.exit_code == 0, res.output
    root = ET.fromstring(conf.read_text())
    texts = {e.get("name") for e in root.iter("Text")}
    controls = {e.get("name"): e for e in [*root.iter("Choices"), *root.iter("Rating")]}
    assert texts == {"prompt", "response"} and set(controls) == {"ok", "quality"}
    assert [c.get("value") for c in controls["ok"].iter("Choice")] == ["pass", "fail"]
    for task in json.loads(out.read_text()):
        for region in task["annotations"][0]["result"]:
            control = controls[region["from_name"]]
            assert region["to_name"] == control.get("toName") in texts
            assert region["type"] == control.tag.lower()
            for choice in region["value"].get("choices", []):
                assert choice in [c.get("value") for c in control.iter("Choice")]

"""`calipers review queue` and `review adjudicate`: the disagreements, then a decision that
becomes the item's final label with who decided."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from calipers.cli import cli
from calipers.review import final_labels
from calipers.store import ImportedJudgment, ReviewCampaignRecord, ReviewItemRecord, Store

QUESTIONS = [
    {"type": "choice", "id": "answered", "prompt": "Answered?", "options": ["answered", "refused"]},
    {"type": "comment", "id": "notes", "prompt": "Notes?"},
]


def _campaign(url: str, kind: str = "single") -> None:
    qs = QUESTIONS if kind == "single" else [{"type": "preference"}]
    with Store.open(url) as s:
        s.create_campaign(ReviewCampaignRecord(name="c", kind=kind, questions=qs, k=2))
        payload = {} if kind == "single" else {"prompt": "?", "a": "A", "b": "B"}
        s.add_review_items(
            "c", [ReviewItemRecord(item_key=f"i{n}", payload=payload) for n in range(3)]
        )
        for name, role in (("r1", "rater"), ("r2", "rater"), ("lead", "adjudicator")):
            s.add_rater("c", name, f"h-{name}", role=role)  # type: ignore[arg-type]
        q, (x, y) = ("answered", ("answered", "refused")) if kind == "single" else (
            "preference", ("left", "right"))  # fmt: skip
        s.import_judgments("c", [
            ImportedJudgment(item_key="i0", rater="r1", answers={q: x}),
            ImportedJudgment(item_key="i0", rater="r2", answers={q: y}),
            ImportedJudgment(item_key="i1", rater="r1", answers={q: x}),
            ImportedJudgment(item_key="i1", rater="r2", answers={q: x}),
            ImportedJudgment(item_key="i2", rater="r1", answers={q: y}),
            ImportedJudgment(item_key="i2", rater="r2", answers={q: x}),
        ])  # fmt: skip


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.stdout, r.stderr


def test_queue_then_adjudicate(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _campaign(url)
    code, out, err = run("--store", url, "review", "queue", "c", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["question"] == "answered"  # the only question that is not a comment
    assert [x["item"] for x in got["items"]] == ["i0", "i2"]
    assert got["items"][0]["votes"] == {'"answered"': 1, '"refused"': 1}
    code, out, err = run(
        "--store", url, "review", "adjudicate", "c", "i0", "--by", "lead",
        "--answer", "answered=refused", "--note", "partial refusal",
    )  # fmt: skip
    assert code == 0, err
    assert "Adjudicated i0" in out
    code, out, _ = run("--store", url, "review", "queue", "c", "--json")
    assert [x["item"] for x in json.loads(out)["items"]] == ["i2"]
    with Store.open(url) as s:
        labels = {
            f.item_key: f
            for f in final_labels(
                s.get_review_items("c"), s.get_judgments("c"), s.get_adjudications("c"), "answered"
            )
        }
        assert s.get_adjudications("c")[0].note == "partial refusal"
    assert (labels["i0"].value, labels["i0"].provenance, labels["i0"].by) == (
        "refused", "adjudicated", "lead",
    )  # fmt: skip
    assert (labels["i1"].value, labels["i1"].provenance) == ("answered", "unanimous")


def test_bad_adjudications_are_refused_with_the_reason(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _campaign(url)
    base = ("--store", url, "review", "adjudicate", "c", "i0")
    code, _, err = run(*base, "--by", "r1", "--answer", "answered=refused")
    assert code == 2 and "only an adjudicator or the owner" in err
    code, _, err = run(*base, "--by", "lead", "--answer", "answered=maybe")
    assert code == 2 and "'maybe' is not one of" in err
    code, _, err = run(*base, "--by", "lead", "--answer", "colour=red")
    assert code == 2 and "No question 'colour'" in err
    code, _, err = run(*base, "--by", "lead", "--answer", "answered")
    assert code == 2 and "expected QUESTION=VALUE" in err
    code, _, err = run("--store", url, "review", "queue", "nope")
    assert code == 2 and "No review campaign is named 'nope'" in err


def test_pairwise_is_decided_in_the_payloads_terms(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _campaign(url, kind="pairwise")
    code, out, err = run("--store", url, "review", "queue", "c", "--json")
    assert code == 0, err
    assert [x["item"] for x in json.loads(out)["items"]] == ["i0", "i2"]
    code, _, err = run(
        "--store",
        url,
        "review",
        "adjudicate",
        "c",
        "i0",
        "--by",
        "lead",
        "--answer",
        "preference=left",
    )
    assert code == 2 and "answer a, b or tie" in err
    code, _, err = run(
        "--store",
        url,
        "review",
        "adjudicate",
        "c",
        "i0",
        "--by",
        "lead",
        "--answer",
        "preference=b",
    )
    assert code == 0, err
    with Store.open(url) as s:
        [f0, *_] = final_labels(
            s.get_review_items("c"), s.get_judgments("c"), s.get_adjudications("c"), "preference"
        )
    assert (f0.item_key, f0.value, f0.provenance) == ("i0", "b", "adjudicated")

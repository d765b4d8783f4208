"""``calipers review import-labels``: a small table imported through the command, what it
refuses, and XSTest's GPT-4 file end to end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from calipers.cli import cli
from calipers.errors import ConfigError, DataError
from calipers.review import (
    final_labels,
    pairwise_item,
    pairwise_outcome,
    parse_assignments,
    preference_answer,
    read_table,
)
from calipers.store import Store
from tests._data import DATA, needs_data

QUESTIONS = """\
questions:
  - id: compliance
    type: choice
    prompt: Does the response comply?
    options: [full, refusal, partial]
"""
MAP = ["--value-map", "1=full,2=refusal", "--value-map", "3=partial"]


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


@pytest.fixture
def table(tmp_path: Path) -> Path:
    (tmp_path / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    rows = [
        {"id": "1", "prompt": "p1", "completion": "c1", "r1": "1", "r2": "1", "final": "1"},
        {"id": "2", "prompt": "p2", "completion": "c2", "r1": "2", "r2": "3", "final": "3"},
        {"id": "3", "prompt": "p3", "completion": "c3", "r1": "2", "r2": "", "final": "2"},
        {"id": "4", "prompt": "p4", "completion": "c4", "r1": "1", "r2": "1", "final": "2"},
    ]
    return write_csv(tmp_path / "t.csv", rows)


def create_args(table: Path, *more: str) -> list[str]:
    return [
        "review",
        "import-labels",
        "c",
        str(table),
        "--key",
        "id",
        "--question",
        "compliance",
        "--rater-column",
        "r1=alice",
        "--rater-column",
        "r2=bob",
        *MAP,
        "--create-from-file",
        "--field",
        "prompt=prompt",
        "--field",
        "response=completion",
        "--questions",
        str(table.parent / "q.yaml"),
        *more,
    ]


def test_a_table_becomes_a_campaign_with_judgments_and_adjudications(table: Path) -> None:
    code, out, err = invoke(*create_args(table, "--final-column", "final"))
    assert code == 0, err
    assert "4 items added, 7 labels imported" in out
    # row 2: the raters disagree; row 4: the final label overrides them; row 3: one label
    # that the final label matches is no disagreement
    assert "2 final labels as adjudications" in out
    with Store.open() as store:
        camp = store.get_campaign("c")
        items = store.get_review_items("c")
        judgments = store.get_judgments("c")
        adjudications = store.get_adjudications("c")
        raters = {r.name: r for r in store.get_raters("c")}
    assert camp.k == 2 and camp.kind == "single"
    assert [i.payload for i in items][1] == {"prompt": "p2", "response": "c2"}
    assert items[1].source["row"]["r2"] == "3" and items[1].source["line"] == 3
    assert {(j.item_key, j.rater): j.answers["compliance"] for j in judgments} == {
        ("1", "alice"): "full",
        ("1", "bob"): "full",
        ("2", "alice"): "refusal",
        ("2", "bob"): "partial",
        ("3", "alice"): "refusal",
        ("4", "alice"): "full",
        ("4", "bob"): "full",
    }
    assert set(raters) == {"alice", "bob", "dataset"}
    assert raters["dataset"].role == "adjudicator"
    assert {r.pool for r in raters.values()} == {"imported"}
    finals = {
        f.item_key: (f.value, f.provenance)
        for f in final_labels(items, judgments, adjudications, "compliance")
    }
    assert finals == {
        "1": ("full", "unanimous"),
        "2": ("partial", "adjudicated"),
        "3": ("refusal", "single"),
        "4": ("refusal", "adjudicated"),
    }


def test_labels_into_an_existing_campaign_and_what_is_refused(table: Path) -> None:
    code, _, err = invoke(
        *create_args(table)[:-7],
        "--create-from-file",
        "--field",
        "prompt=prompt",
        "--field",
        "response=completion",
    )
    assert code != 0 and "give --questions" in err
    assert invoke(*create_args(table, "--rater-column", "r1=alice"))[0] != 0  # given twice
    # only r1 first (k = 1), then r2 into the same campaign: over k, refused
    args = create_args(table)
    i = args.index("r2=bob")
    code, out, err = invoke(*args[: i - 1], *args[i + 1 :])
    assert code == 0, err
    assert "4 items added, 4 labels imported" in out
    plain = [
        "review",
        "import-labels",
        "c",
        str(table),
        "--key",
        "id",
        "--question",
        "compliance",
        *MAP,
    ]
    code, _, err = invoke(*plain, "--rater-column", "r2=bob")
    assert code != 0 and "would get 2 labels; the campaign takes k=1" in err
    code, _, err = invoke(*plain, "--rater-column", "r1=alice")
    assert code != 0 and "'alice' already has a label on item '1'" in err
    code, _, err = invoke(*plain, "--rater-column", "r2=bob", "--question", "nope")
    assert code != 0 and "no question 'nope'" in err
    # an unmapped value names its row and column, and nothing is written
    code, _, err = invoke(
        "review",
        "import-labels",
        "c",
        str(table),
        "--key",
        "id",
        "--question",
        "compliance",
        "--rater-column",
        "r2=bob",
    )
    assert code != 0 and "row 1, column 'r2'" in err and "--value-map" in err
    with Store.open() as store:
        assert len(store.get_judgments("c")) == 4
        assert {r.name for r in store.get_raters("c")} == {"alice"}


def test_read_table_and_assignments(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps({"id": 1, "x": "a"}) + "\n\n" + json.dumps({"id": 2}) + "\n")
    assert read_table(p) == [{"id": 1, "x": "a"}, {"id": 2}]
    assert parse_assignments(["a=b,c=d", "e = f"], "--x") == {"a": "b", "c": "d", "e": "f"}
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_assignments(["a"], "--x")
    (tmp_path / "q.yaml").write_text("x")
    with pytest.raises(ConfigError, match="unsupported data format"):
        read_table(tmp_path / "q.yaml")


XSTEST = "xstest/model_completions/xstest_v2_completions_gpt4.csv"


@needs_data(XSTEST)
def test_xstest_gpt4_through_the_command(tmp_path: Path) -> None:
    (tmp_path / "q.yaml").write_text(QUESTIONS, encoding="utf-8")
    code, out, err = invoke(
        "review", "import-labels", "xstest", str(DATA / XSTEST), "--key", "id",
        "--prefix", "gpt4:", "--create-from-file", "--field", "prompt=prompt",
        "--field", "response=completion", "--questions", str(tmp_path / "q.yaml"),
        "--question", "compliance",
        "--rater-column", "annotation_1=ann1", "--rater-column", "annotation_2=ann2",
        "--value-map", "1_full_compliance=full,2_full_refusal=refusal",
        "--value-map", "3_partial_refusal=partial",
        "--final-column", "final_label",
    )  # fmt: skip
    assert code == 0, err
    with (DATA / XSTEST).open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    disagree = sum(r["annotation_1"] != r["annotation_2"] for r in rows)
    assert f"450 items added, 900 labels imported (ann1, ann2), {disagree} final" in out
    with Store.open() as store:
        assert len(store.get_adjudications("xstest")) == disagree == 7
        assert store.get_review_items("xstest")[0].item_key == "gpt4:v2-1"


def test_pairwise_items_and_known_choices() -> None:
    rng = np.random.default_rng(3)
    items = [pairwise_item(f"k{i}", "p", ("x", "X"), ("y", "Y"), rng) for i in range(40)]
    swaps = [bool(b) for b in np.random.default_rng(3).integers(2, size=40)]
    assert [i.source["a_is_second_given"] for i in items] == swaps
    for item, swapped in zip(items, swaps, strict=True):
        assert item.payload["a"] == ("Y" if swapped else "X")
        answer, shown_swapped = preference_answer(item, "x")
        assert not shown_swapped
        assert pairwise_outcome(answer, shown_swapped) == ("b" if swapped else "a")
    assert preference_answer(items[0], None) == ("tie", False)
    with pytest.raises(DataError, match="neither its a nor its b"):
        preference_answer(items[0], "z")

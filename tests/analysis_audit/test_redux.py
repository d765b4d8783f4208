"""The audit joined with the real MMLU-Redux annotations, on synthetic (fake-model) runs.

The expectations come from reading the annotation CSV here with the csv module, not through
the task loader the audit uses.
"""

from __future__ import annotations

import ast
import csv
from typing import TypedDict

import pytest
from statsmodels.stats.proportion import proportion_confint

from calipers.analysis._audit import audit
from calipers.models import FakeModel
from tests._data import DATA, needs_data

from .conftest import make_run, stored

LIMIT = 100  # the first 100 items: all of abstract_algebra


pytestmark = needs_data("mmlu_redux")


class Row(TypedDict):
    question: str
    options: list[str]
    gold: int
    fix: int | None  # the annotators' proposed answer
    type: str  # the Redux error type


def _rows() -> list[Row]:
    assert DATA is not None
    path = DATA / "mmlu_redux" / "mmlu_abstract_algebra.csv"
    with path.open(newline="", encoding="utf-8-sig") as f:
        raw = list(csv.DictReader(f))[:LIMIT]
    rows: list[Row] = []
    for r in raw:
        fix = (r["correct_answer"] or "").strip().upper()
        fixed = (
            "ABCD".index(fix)
            if fix in ("A", "B", "C", "D")
            else (int(fix) if fix in ("0", "1", "2", "3") else None)
        )
        rows.append(
            {
                "question": r["question"],
                "options": ast.literal_eval(r["choices"]),
                "gold": int(r["answer"]),
                "fix": fixed,
                "type": "_".join(r["error_type"].replace("_", " ").split()).lower(),
            }
        )
    return rows


def _model(name: str, choose: dict[str, int]) -> FakeModel:
    """Answers option ``choose[key]`` (confidently) where the prompt holds ``key``."""

    def loglik(context: str, continuation: str) -> float:
        key = next(k for k in choose if k in context)
        return 0.0 if continuation.strip() == "ABCD"[choose[key]] else -6.0

    return FakeModel(name=name, loglik=loglik)


def test_flagging_against_the_redux_annotations() -> None:
    rows = _rows()
    first_ok = next(i for i, r in enumerate(rows) if r["type"] == "ok")
    wanted: list[int] = []
    for i, r in enumerate(rows):
        gold = r["gold"]
        if r["type"] == "wrong_groundtruth" and r["fix"] is not None:
            wanted.append(r["fix"])  # the annotators' fix
        elif r["type"] == "no_correct_answer" or i == first_ok:
            wanted.append((gold + 1) % 4)  # agree on a wrong option: a flag Redux
        else:  # calls "no correct answer" (any error) and one on an "ok" item
            wanted.append(gold)
    keys = [f"{r['question']}\nA. {r['options'][0]}\nB. {r['options'][1]}" for r in rows]
    assert len(set(keys)) == len(keys)
    choose = dict(zip(keys, wanted, strict=True))
    ids = [
        make_run(
            "mmlu_redux", _model(n, choose), formulation="letter", limit=LIMIT, data_dir=str(DATA)
        )
        for n in ("m1", "m2", "m3")
    ]
    rep = audit(stored(*ids), "mmlu_redux")

    expect = {f"abstract_algebra/{i}" for i, r in enumerate(rows) if wanted[i] != r["gold"]}
    assert {f.id for f in rep.flagged} == expect
    assert rep.annotations.startswith(f"from the task data: {LIMIT} items annotated")
    truth = {
        f"abstract_algebra/{i}" for i, r in enumerate(rows) if r["type"] == "wrong_groundtruth"
    }
    errors = {f"abstract_algebra/{i}" for i, r in enumerate(rows) if r["type"] != "ok"}
    wrong, anyerr = rep.agreement
    for row, t in ((wrong, truth), (anyerr, errors)):
        tp = len(expect & t)
        assert (row.tp, row.fp, row.fn, row.n_items) == (
            tp,
            len(expect - t),
            len(t - expect),
            LIMIT,
        )
        low, high = proportion_confint(tp, len(expect), method="wilson")
        assert (row.precision.low, row.precision.high) == pytest.approx((low, high))
        assert row.recall.value == pytest.approx(tp / len(t))
    assert wrong.fn == sum(1 for r in rows if r["type"] == "wrong_groundtruth" and r["fix"] is None)
    fixes = sum(1 for r in rows if r["type"] == "wrong_groundtruth" and r["fix"] is not None)
    assert rep.correction_match == {"n": fixes, "agreed_equals_proposed": fixes}
    flagged = {f.id: f for f in rep.flagged}
    ok_item = flagged[f"abstract_algebra/{first_ok}"]
    assert ok_item.annotation is not None and ok_item.annotation.error_type == "ok"
    assert ok_item.gold_text == rows[first_ok]["options"][rows[first_ok]["gold"]]

"""Final labels and their provenance, checked against answers worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from calipers.errors import ConfigError
from calipers.review import (
    disagreements,
    final_labels,
    pairwise_outcome,
    parse_questions,
    validate_answers,
)
from calipers.store import AdjudicationRecord, JudgmentRecord, ReviewItemRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def items(*keys: str, gold: str | None = None, pairwise: bool = False) -> list[ReviewItemRecord]:
    payload = {"prompt": "?", "a": "A", "b": "B"} if pairwise else {"prompt": "?", "response": "R"}
    out = [ReviewItemRecord(item_key=k, payload=payload) for k in keys]
    if gold:
        out.append(ReviewItemRecord(item_key=gold, payload={}, gold={"ok": True}))
    return out


def j(item: str, rater: str, value: Any, *, swapped: bool | None = None, counted: bool = True,
      qid: str = "ok") -> JudgmentRecord:  # fmt: skip
    n = j.__dict__.setdefault("n", 0) + 1
    j.__dict__["n"] = n
    return JudgmentRecord(
        id=n, assignment_id=n, item_key=item, rater=rater, pool="p", answers={qid: value},
        seconds=1.0, is_repeat=not counted, counted=counted, swapped=swapped, created_at=T0,
    )  # fmt: skip


def adj(item: str, value: Any, by: str = "judge") -> AdjudicationRecord:
    return AdjudicationRecord(
        id=1, item_key=item, adjudicator=by, answers={"ok": value}, note=None, created_at=T0
    )


def test_provenance_by_hand() -> None:
    its = items("one", "all", "most", "tie", "decided", "none", gold="g")
    js = [
        j("one", "r1", True),
        j("all", "r1", True), j("all", "r2", True), j("all", "r3", True),
        j("most", "r1", False), j("most", "r2", True), j("most", "r3", False),
        j("tie", "r1", True), j("tie", "r2", False),
        j("decided", "r1", True), j("decided", "r2", False),
        j("g", "r1", False),  # a gold item: never a label
        j("all", "r1", False, counted=False),  # a repeat: never counted
    ]  # fmt: skip
    got = {f.item_key: f for f in final_labels(its, js, [adj("decided", False)], "ok")}
    assert set(got) == {"one", "all", "most", "tie", "decided"}  # "none" has no judgment
    assert (got["one"].provenance, got["one"].value) == ("single", True)
    assert (got["all"].provenance, got["all"].value, got["all"].n_judgments) == (
        "unanimous", True, 3,
    )  # fmt: skip
    assert (got["most"].provenance, got["most"].value) == ("majority", False)
    assert got["most"].votes == {"false": 2, "true": 1}
    assert (got["tie"].provenance, got["tie"].value) == ("unresolved", None)
    assert (got["decided"].provenance, got["decided"].value, got["decided"].by) == (
        "adjudicated", False, "judge",
    )  # fmt: skip
    assert disagreements(its, js, [adj("decided", False)], "ok") == ["most", "tie"]


def test_pairwise_answers_agree_across_swapped_sides() -> None:
    assert pairwise_outcome("left", False) == "a" and pairwise_outcome("left", True) == "b"
    assert pairwise_outcome("right", False) == "b" and pairwise_outcome("right", True) == "a"
    assert pairwise_outcome("tie", True) == "tie" and pairwise_outcome("b", None) == "b"
    with pytest.raises(ValueError):
        pairwise_outcome("up", False)
    # r1 saw a on the left and picked it; r2 saw the sides swapped and picked the right: a too
    js = [j("x", "r1", "left", swapped=False), j("x", "r2", "right", swapped=True)]
    [f] = final_labels(items("x", pairwise=True), js, [], "ok")
    assert (f.provenance, f.value) == ("unanimous", "a")
    # an adjudicator sees a pairwise item unswapped: "right" is b
    two = [j("x", "r1", "left", swapped=False), j("x", "r2", "right", swapped=True)]
    [f] = final_labels(items("x", pairwise=True), two, [adj("x", "right")], "ok")
    assert (f.provenance, f.value) == ("adjudicated", "b")


def test_a_single_items_choice_named_left_is_not_a_preference() -> None:
    # a choice question whose options happen to be "left" / "right" (say, which hand)
    js = [j("x", "r1", "left"), j("x", "r2", "left")]
    [f] = final_labels(items("x"), js, [adj("y", "right")], "ok")
    assert (f.provenance, f.value) == ("unanimous", "left")
    [g] = final_labels(items("y"), [j("y", "r1", "left")], [adj("y", "right")], "ok")
    assert (g.provenance, g.value) == ("adjudicated", "right")


def test_weighted_follows_the_rater_who_agrees_with_the_others() -> None:
    # r1 and r2 agree on 20 items; r3 disagrees with them everywhere. On the two-way ties
    # between r1 and r3, Dawid-Skene trusts r1 (agrees with r2), so r1's answer wins.
    keys = [f"k{i}" for i in range(20)]
    js = []
    for i, k in enumerate(keys):
        v = i % 2 == 0
        js += [j(k, "r1", v), j(k, "r2", v), j(k, "r3", not v)]
    js += [j("t1", "r1", True), j("t1", "r3", False), j("t2", "r1", False), j("t2", "r3", True)]
    its = items(*keys, "t1", "t2")
    got = {f.item_key: f for f in final_labels(its, js, [], "ok", method="weighted")}
    assert (got["t1"].provenance, got["t1"].value) == ("weighted", True)
    assert (got["t2"].provenance, got["t2"].value) == ("weighted", False)
    assert all(got[k].value == (i % 2 == 0) for i, k in enumerate(keys))
    with pytest.raises(ValueError):
        final_labels(its, js, [], "ok", method="vote")  # type: ignore[arg-type]


def test_the_preference_question() -> None:
    qs = parse_questions({"questions": [{"type": "preference"}, {"type": "comment", "id": "why",
                                                                  "prompt": "Why?"}]})  # fmt: skip
    pref = qs.preference()
    assert pref is not None and pref.id == "preference" and pref.options == ("left", "right", "tie")
    assert validate_answers(qs, {"preference": "tie"}) == {"preference": "tie"}
    with pytest.raises(ConfigError, match="'a' is not one of"):
        validate_answers(qs, {"preference": "a"})
    no_ties = parse_questions({"questions": [{"type": "preference", "ties": False}]})
    with pytest.raises(ConfigError):
        validate_answers(no_ties, {"preference": "tie"})
    assert parse_questions({"questions": [{"type": "pass_fail", "id": "ok", "prompt": "?"}]}
                           ).preference() is None  # fmt: skip

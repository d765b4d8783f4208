"""Pairwise results and rater quality control in the review report, on planted campaigns:
Bradley-Terry order of a planted tournament, position bias of a rater who always picks
"left", a planted random clicker flagged while diligent raters are not, gold accuracy,
attention checks, self-consistency on repeats, Dawid-Skene competence; skips never labels."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from calipers.review import review_report
from calipers.store import ReviewItemRecord, Store
from tests.review.test_report import make_campaign, rate_all, store

__all__ = ["store"]  # the fixture

STRENGTH = {"m1": 3, "m2": 2, "m3": 1}
PREF = [{"id": "preference", "type": "preference", "prompt": "Which is better?"}]


def tournament() -> list[dict[str, Any]]:
    pairs = list(itertools.permutations(STRENGTH, 2))  # both sides for every pair
    return [
        {"a": {"model": a}, "b": {"model": b}}
        for a, b in (pairs[i % len(pairs)] for i in range(36))
    ]


def test_bradley_terry_order_pair_rates_and_position_bias(store: Store) -> None:
    sources = tournament()
    make_campaign(store, 36, k=3, kind="pairwise", questions=PREF, sources=sources)

    def answer(item: str, rater: str, swapped: bool | None) -> dict[str, Any]:
        if rater == "lefty":
            return {"preference": "left"}
        src = sources[int(item[1:])]
        a_better = STRENGTH[src["a"]["model"]] > STRENGTH[src["b"]["model"]]
        left_is_a = not swapped
        return {"preference": "left" if a_better == left_is_a else "right"}

    rate_all(store, {"d0": "default", "d1": "default", "lefty": "default"}, answer)
    report = review_report(store, "c", seed=5)
    assert report.pairwise is not None
    p = report.pairwise
    assert [m.model for m in p.ratings] == ["m1", "m2", "m3"]
    assert p.ratings[0].elo.value > p.ratings[1].elo.value > p.ratings[2].elo.value
    # hand computation from the stored raw answers: a wins when "left" was a's side
    judgments = store.get_judgments("c")
    wins: dict[str, list[float]] = defaultdict(list)
    lefts = []
    for j in judgments:
        raw = j.answers["preference"]
        lefts.append(raw == "left")
        src = sources[int(j.item_key[1:])]
        a_won = (raw == "left") != bool(j.swapped)
        winner = src["a"]["model"] if a_won else src["b"]["model"]
        if {src["a"]["model"], src["b"]["model"]} == {"m1", "m2"}:
            wins[j.item_key].append(1.0 if winner == "m1" else 0.0)
    pair = next(x for x in p.pairs if (x.model_a, x.model_b) == ("m1", "m2"))
    assert pair.n_items == len(wins)
    assert pair.win_a.value == pytest.approx(np.mean([np.mean(v) for v in wins.values()]))
    assert pair.tie.value == 0.0
    assert p.left_share.value == pytest.approx(np.mean(lefts))
    qc = {r.name: r for r in report.raters}
    assert qc["lefty"].left_share is not None and qc["lefty"].left_share.value == 1.0
    assert qc["lefty"].left_share.low > 0.5  # a preference for the left, with its interval
    assert qc["d0"].left_share is not None and qc["d0"].left_share.low < 0.5


OK = [{"id": "ok", "type": "pass_fail", "prompt": "Correct?"}]
N = 40
TRUTH = np.random.default_rng(11).random(N) < 0.5


def test_random_clicker_is_flagged_and_diligent_raters_are_not(store: Store) -> None:
    controls = [
        ReviewItemRecord(
            item_key=f"g{g}", payload={"prompt": "G", "response": "R"}, gold=g % 2 == 0
        )
        for g in range(6)
    ] + [
        ReviewItemRecord(
            item_key="attn",
            payload={"prompt": "Answer fail", "response": "-"},
            gold={"ok": False},
            is_attention_check=True,
        )
    ]
    make_campaign(
        store, N, k=3, questions=OK, controls=controls, repeat_fraction=0.2,
        settings={"min_seconds": 5},
    )  # fmt: skip
    clicks = np.random.default_rng(3)

    def answer(item: str, rater: str, _swapped: bool | None) -> dict[str, Any] | None:
        if rater == "clicker":
            return {"ok": bool(clicks.integers(2))}
        if item.startswith("g"):
            return {"ok": int(item[1:]) % 2 == 0}
        if item == "attn":
            return {"ok": False}
        if rater == "d1" and item == "i000":
            return None  # "I can't judge this"
        return {"ok": bool(TRUTH[int(item[1:])])}

    seconds = {"clicker": 2.0, "d0": 25.0, "d1": 40.0}
    rate_all(
        store, {"d0": "default", "d1": "default", "clicker": "default"}, answer,
        seconds=lambda r: seconds[r],
    )  # fmt: skip
    report = review_report(store, "c")
    qc = {r.name: r for r in report.raters}
    assert qc["clicker"].flagged and not qc["d0"].flagged and not qc["d1"].flagged
    assert qc["clicker"].too_fast == qc["clicker"].answered and qc["d0"].too_fast == 0
    assert qc["d0"].median_seconds == 25.0
    assert qc["d0"].gold_accuracy.value == 1.0 and qc["d0"].gold_accuracy.n == 6
    assert qc["d0"].attention.value == 1.0 and qc["d0"].attention.n == 1
    assert qc["d0"].self_consistency.n >= 1 and qc["d0"].self_consistency.value == 1.0
    assert qc["d0"].competence is not None and qc["clicker"].competence is not None
    assert qc["d0"].competence > qc["clicker"].competence + 0.2
    judgments = store.get_judgments("c")
    assert qc["d1"].answered == sum(1 for j in judgments if j.rater == "d1")
    # a skip is never a label: i000 has the two judgments that were given
    (i000,) = [f for f in report.final_labels if f.item_key == "i000"]
    assert i000.n_judgments == 2
    assert all(f.item_key[0] == "i" for f in report.final_labels)  # controls never labelled

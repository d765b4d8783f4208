"""Pairwise judging in both orders: an inconsistent pair is a tie; position bias measured."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from calipers.errors import DataError
from calipers.scorers import Scorer, build_scorer
from calipers.scorers._judge import JudgeClient, PairwiseVerdict, pairwise_judge
from calipers.types import Sample

from .conftest import CALLS, on_text, parse_prompt

Q = Sample(id="q", input="Explain tides.", fields={"baseline": "The moon pulls water."})


def pairwise(name: str, **args: object) -> Scorer:
    return build_scorer(
        {"name": "llm_judge_pairwise", "args": {"judge": f"judgetest:{name}", **args}}
    )


def verdict(name: str, a: str, b: str) -> PairwiseVerdict:
    return asyncio.run(pairwise_judge(JudgeClient(f"judgetest:{name}"), "Q?", a, b))


@pytest.mark.parametrize(
    ("a", "b", "outcome", "a_wins"),
    [
        ("GOOD answer", "meh", "a", 1.0),
        ("meh", "GOOD one", "b", 0.0),
        ("x", "y", "tie", 0.5),
    ],
)
def test_consistent_judge_keeps_its_verdict(a: str, b: str, outcome: str, a_wins: float) -> None:
    v = verdict("fair", a, b)
    assert (v.outcome, v.a_wins, v.consistent) == (outcome, a_wins, True)


def test_both_orders_are_asked() -> None:
    CALLS.clear()
    verdict("fair", "GOOD answer", "meh")
    shown = sorted((parse_prompt(r)[1]["ANSWER 1"], parse_prompt(r)[1]["ANSWER 2"]) for r in CALLS)
    assert shown == [("GOOD answer", "meh"), ("meh", "GOOD answer")]


def test_position_biased_judge_gives_ties() -> None:
    for a, b in (("GOOD answer", "meh"), ("meh", "GOOD"), ("x", "y")):
        v = verdict("first", a, b)
        assert (v.outcome, v.a_wins, v.consistent) == ("tie", 0.5, False)
        assert (v.first_preferred, v.first_preferred_swapped) == (1.0, 1.0)


def test_scorer_compares_output_with_the_baseline_and_stores_both_verdicts() -> None:
    win = on_text(pairwise("fair"), Q, "GOOD: gravity of moon and sun.")
    assert win.values == {"win": 1.0, "consistent": 1.0}
    assert win.metadata["outcome"] == "win"
    orders = [v["order"] for v in win.metadata["verdicts"]]
    assert orders == ["output_first", "baseline_first"]
    assert [v["winner_position"] for v in win.metadata["verdicts"]] == ["first", "second"]
    tie = on_text(pairwise("first"), Q, "GOOD: gravity.")
    assert tie.values == {"win": 0.5, "consistent": 0.0} and tie.metadata["outcome"] == "tie"
    loss = on_text(pairwise("longer"), Q, "Moon.")
    assert loss.values == {"win": 0.0, "consistent": 1.0}
    assert loss.metadata["baseline_chars"] == len("The moon pulls water.")


def test_baseline_from_target_or_missing() -> None:
    s = pairwise("fair", baseline_field=None)
    assert on_text(s, Sample(id="t", input="?", target="GOOD ref"), "plain").values["win"] == 0.0
    with pytest.raises(DataError, match="baseline"):
        on_text(pairwise("fair"), Sample(id="t", input="?"), "x")


def test_spec_round_trip(tmp_path: Path) -> None:
    s = pairwise("fair", rubric="Be right.")
    again = build_scorer(s.spec.model_dump(mode="json"))
    assert again.spec == s.spec and again.metrics == ("win", "consistent")
    assert on_text(again, Q, "GOOD") == on_text(s, Q, "GOOD")

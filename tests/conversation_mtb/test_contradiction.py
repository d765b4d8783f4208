"""self_contradiction: checkable answers compared exactly on constructed conversations; the
judge path on planted conversations (precision and recall recovered for a judge of known
accuracy); judge failures as errors."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from calipers.analysis import calibrate_contradiction_judge
from calipers.errors import CalipersError
from calipers.scorers import (
    build_scorer,
    checkable_answer,
    planted_conversations,
    planted_transcript,
)
from calipers.types import ChatMessage, ModelResponse, Sample, SampleOutput, Score, Transcript

from .conftest import PLANTED_N, PLANTED_SEED


def convo(*replies: str, users: tuple[str, ...] | None = None) -> SampleOutput:
    us = users or tuple(f"question {i}" for i in range(len(replies)))
    msgs = []
    for u, r in zip(us, replies, strict=True):
        msgs += [ChatMessage(role="user", content=u), ChatMessage(role="assistant", content=r)]
    t = Transcript(messages=tuple(msgs), replies=replies)
    return SampleOutput(response=ModelResponse(text=replies[-1]), transcript=t)


def score(out: SampleOutput, groups: list[list[int]] | None = None, **args: Any) -> Score:
    s = Sample(id="x", input="q", fields={} if groups is None else {"same_question": groups})
    return asyncio.run(build_scorer({"name": "self_contradiction", "args": args})(s, out))


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("B", ("letter", "B")),
        ("(c).", None),  # lower-case alone is not an option letter
        ("(C).", ("letter", "C")),
        ("The answer is (D) because of X.", ("letter", "D")),
        ("I first thought A, but the final answer is: B", ("letter", "B")),
        ("42", ("number", 42.0)),
        ("1,250.", ("number", 1250.0)),
        ("So the answer is -3.5", ("number", -3.5)),
        ("Yes.", ("yes_no", "yes")),
        ("No, because the door was locked.", ("yes_no", "no")),
        ("Nobody knows.", None),
        ("It is probably Paris.", None),
        ("There are 3 cats and 4 dogs.", None),  # numbers in prose: not a committed answer
    ],
)
def test_checkable_answers(text: str, want: Any) -> None:
    assert checkable_answer(text) == want


def test_declared_pairs_with_checkable_answers_are_compared_exactly() -> None:
    out = convo("The answer is B.", "Paris is lovely.", "B", "The answer is C", "12", "12.0")
    sc = score(out, [[0, 2, 3], [4, 5]])
    pairs = {(p["i"], p["j"]): p for p in sc.metadata["pairs"]}
    assert set(pairs) == {(0, 2), (0, 3), (2, 3), (4, 5)}
    assert {k: p["contradiction"] for k, p in pairs.items()} == {
        (0, 2): False,
        (0, 3): True,
        (2, 3): True,
        (4, 5): False,  # 12 and 12.0 are one number
    }
    assert all(p["method"] == "answers" for p in pairs.values())
    assert sc.values == {"contradiction": 1.0, "contradiction_rate": 2 / 4}
    assert sc.metadata["raw_score"] == "true"


def test_consistent_and_unchecked_conversations() -> None:
    ok = score(convo("Yes.", "yes", "Yes, definitely."), [[0, 1, 2]])
    assert ok.values == {"contradiction": 0.0, "contradiction_rate": 0.0}
    # kinds differ, or prose: without a judge the pair is unchecked, and the sample unscored
    none = score(convo("Yes.", "42", "It is Paris."), [[0, 1], [1, 2]])
    assert none.values == {}
    assert [p["method"] for p in none.metadata["pairs"]] == ["unchecked", "unchecked"]
    assert "raw_score" not in none.metadata
    # undeclared: every pair would go to a judge, never compared as answers
    free = score(convo("12", "13"))
    assert free.values == {} and free.metadata["pairs"][0]["method"] == "unchecked"


def test_the_judge_decides_the_pairs_answers_cannot() -> None:
    c = next(c for c in planted_conversations(PLANTED_N, PLANTED_SEED) if c.contradicts)
    s = c.as_sample()
    sc = asyncio.run(
        build_scorer({"name": "self_contradiction", "args": {"judge": "contrajudge:honest"}})(
            s, SampleOutput(response=ModelResponse(text="x"), transcript=planted_transcript(c))
        )
    )
    assert sc.values == {"contradiction": 1.0, "contradiction_rate": 1.0}
    (p,) = sc.metadata["pairs"]
    assert (p["i"], p["j"], p["method"]) == (*c.pair, "judge")


def test_a_judge_that_cannot_answer_is_an_error() -> None:
    with pytest.raises(CalipersError, match="no readable verdict"):
        score(convo("Paris.", "Lyon."), judge="contrajudge:garbage")


def test_planted_set_is_balanced_seeded_and_judge_only() -> None:
    a, b = planted_conversations(101, 5), planted_conversations(101, 5)
    assert a == b and a != planted_conversations(101, 6)
    assert sum(c.contradicts for c in a) == 50
    for c in a:
        i, j = c.pair
        assert i < j and c.turns[i][0] != c.turns[j][0]  # re-asked in other words
        assert checkable_answer(c.turns[i][1]) is None or checkable_answer(c.turns[j][1]) is None


def test_a_judge_of_accuracy_080_is_measured_as_080() -> None:
    """The issue's test: precision and recall intervals both cover 0.8."""
    rep = asyncio.run(
        calibrate_contradiction_judge("contrajudge:acc80", n=PLANTED_N, seed=PLANTED_SEED)
    )
    assert rep.n_matched == PLANTED_N and rep.n_judge_errors == 0
    (tp, fn), (fp, tn) = rep.confusion
    assert tp + fn == fp + tn == PLANTED_N // 2
    for est in (rep.precision, rep.recall, rep.agreement):
        assert est.low <= 0.8 <= est.high, est
        assert est.high - est.low < 0.2  # informative, not vacuous
    assert rep.precision.value == pytest.approx(tp / (tp + fp))
    assert rep.recall.value == pytest.approx(tp / (tp + fn))
    honest = asyncio.run(
        calibrate_contradiction_judge("contrajudge:honest", n=PLANTED_N, seed=PLANTED_SEED)
    )
    assert honest.precision.value == honest.recall.value == 1.0
    assert not (honest.recall.low <= 0.8 <= honest.recall.high)  # the test can tell them apart


def test_a_judge_with_no_verdicts_measures_nothing() -> None:
    rep = asyncio.run(calibrate_contradiction_judge("contrajudge:garbage", n=40, seed=0))
    assert rep.n_matched == 0 and rep.n_judge_errors == 40
    assert rep.precision.n == 0 and math.isnan(rep.precision.value)

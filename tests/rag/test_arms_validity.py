"""The validity check catches planted violations and passes what the arms build."""

from __future__ import annotations

from typing import Any

import pytest

from calipers.tasks.rag import (
    Passage,
    PromptBudget,
    RagArm,
    find_violations,
    passages_of,
    with_passages,
)
from calipers.tasks.rag._arms import degrade
from calipers.tasks.rag._validity import differs_only_in_answer
from calipers.types import Sample
from tests.rag._arms_corpus import corpus


def _budget() -> PromptBudget:
    return PromptBudget(3000, lambda s: len(str(s.fields["context"]).split()) + 50)


@pytest.mark.parametrize(
    "arm",
    [
        RagArm(noise=0.8),
        RagArm(noise=0.8, distractor="hard"),
        RagArm(noise=0.4, distractor="counterfactual"),
        RagArm(gold="drop"),
        RagArm(position="middle", distractor="hard"),
        RagArm(fill=0.5),
        RagArm(retriever="bm25", k=10),
    ],
)
def test_what_the_arms_build_is_valid(arm: RagArm) -> None:
    pool = corpus(60)
    out = degrade(pool[:20], pool, arm, _budget() if arm.fill else None)
    assert find_violations(out, pool) == []


def _replace(s: Sample, at: int, **update: Any) -> Sample:
    ps = passages_of(s)
    ps[at] = ps[at].model_copy(update=update)
    return with_passages(s, ps)


@pytest.mark.parametrize("kind", ["distractor", "hard", "filler"])
def test_a_distractor_with_an_alias_is_caught(kind: str) -> None:
    pool = corpus(30)
    s = degrade(pool[:1], pool, RagArm(noise=0.4), None)[0]
    bad = _replace(s, 2, text="They moved to the town of town0 last year.", kind=kind)
    in_title = _replace(s, 1, title="TOWN0", kind=kind)
    found = find_violations([bad, in_title], pool)
    assert [(v.item, v.passage, v.rule) for v in found] == [
        ("q0", passages_of(s)[2].id, "alias in distractor"),
        ("q0", passages_of(s)[1].id, "alias in distractor"),
    ]


def test_retrieved_passages_may_contain_the_answer() -> None:
    pool = corpus(10)
    s = _replace(pool[0], 0, kind="retrieved", gold=False)
    assert find_violations([s], pool) == []


def test_task_given_distractors_are_checked() -> None:
    pool = corpus(5)
    bad = Passage(id="d", text="Town0 is lovely.", kind="hard").model_dump()
    s = pool[0].model_copy(update={"metadata": {**pool[0].metadata, "distractors": [bad]}})
    assert [v.passage for v in find_violations([s])] == ["d"]


def _with_cf(s: Sample, text: str, answer: str) -> Sample:
    cf = {"passage": Passage(id="cf", text=text, kind="counterfactual").model_dump()}
    return s.model_copy(
        update={"metadata": {**s.metadata, "counterfactual": cf | {"answer": answer}}}
    )


def test_counterfactual_violations_are_caught() -> None:
    pool = corpus(5)
    gold = passages_of(pool[0])[0]
    swapped = gold.text.replace("Town0", "Town4")
    title = f"{gold.title}\n"  # the check compares title and text as shown
    ok = _with_cf(pool[0], title + swapped, "Town4")
    assert find_violations([ok], pool) == []
    more = _with_cf(pool[0], title + swapped.replace("summer", "winter"), "Town4")
    still = _with_cf(pool[0], title + gold.text.replace("near", "Town4 near"), "Town4")
    absent = _with_cf(pool[0], title + gold.text.replace("Town0", "Town9"), "Town4")
    details = [v.detail for v in find_violations([more, still, absent], pool)]
    assert len(details) == 3
    assert "beyond the span" in details[0]
    assert "still contains" in details[1]
    assert "does not contain its answer" in details[2]


def test_span_diff_handles_shared_words_punctuation_and_repeats() -> None:
    gold = "John Smith's novel sold 1,000 copies; John Smith was pleased."
    ok = "John Brown's novel sold 1,000 copies; John Brown was pleased."
    assert differs_only_in_answer(gold, ok, ["John Smith"], "John Brown")
    assert not differs_only_in_answer(
        gold, ok.replace("sold", "lost"), ["John Smith"], "John Brown"
    )
    assert not differs_only_in_answer(gold, gold, ["John Smith"], "John Brown")
    assert differs_only_in_answer("In 1,000 BC.", "In 2,500 BC.", ["1,000"], "2,500")

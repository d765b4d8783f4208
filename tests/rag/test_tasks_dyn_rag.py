"""dyn_rag: every invariant the generator promises, recomputed here from the items alone."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from calipers.scorers import alias_in, build_scorer
from calipers.tasks import LoadContext, get_task
from calipers.tasks.rag import Passage, is_rag_task, passages_of
from calipers.types import ModelResponse, Sample, SampleOutput


@pytest.fixture(scope="module")
def items() -> list[Sample]:
    task = get_task("dyn_rag")
    return [*task.load(LoadContext(seed=1, n=200)), *task.load(LoadContext(seed=2, n=200))]


def _distractors(s: Sample) -> list[Passage]:
    return [Passage.model_validate(p) for p in s.metadata["distractors"]]


def test_prefix_stable_seeded_and_fresh() -> None:
    load = get_task("dyn_rag").load
    short, long = load(LoadContext(seed=5, n=7)), load(LoadContext(seed=5, n=40))
    assert list(short) == list(long)[:7]
    assert list(load(LoadContext(seed=5, n=7))) == list(short)
    other = load(LoadContext(seed=6, n=40))
    names = {s.metadata["entity"] for s in long}
    assert len(names & {s.metadata["entity"] for s in other}) <= 2
    assert len(load(LoadContext(seed=5))) == 200  # the default n


def test_task_is_a_dynamic_rag_task() -> None:
    task = get_task("dyn_rag")
    assert is_rag_task(task) and task.dynamic and task.params.max_tokens == 32


def test_answers_are_stated_in_every_gold_passage(items: list[Sample]) -> None:
    answerable = [s for s in items if not s.metadata["unanswerable"]]
    assert 0.7 < len(answerable) / len(items) < 0.9
    golds: Counter[int] = Counter()
    for s in answerable:
        ps = passages_of(s)
        assert ps and all(p.gold and p.kind == "gold" for p in ps)
        assert s.target == s.metadata["answers"][0]
        for p in ps:
            assert alias_in(p.text, s.metadata["answers"]), (s.id, p.text)
            assert s.metadata["entity"] in p.text
        golds[len(ps)] += 1
    assert set(golds) == {1, 2, 3, 4, 5}  # several gold passages happen, up to five


def test_no_distractor_holds_an_answer_and_wrong_answers_are_theirs(items: list[Sample]) -> None:
    with_wrong = 0
    for s in items:
        ds = _distractors(s)
        wrong = s.metadata["wrong_answers"]
        ids = {d.id for d in ds}
        assert set(wrong) <= ids and len(ids) == len(ds)
        assert all(not d.gold and d.kind == "hard" for d in ds)
        if not s.metadata["unanswerable"]:
            assert not any(alias_in(d.text, s.metadata["answers"]) for d in ds), s.id
        for d in ds:
            if d.id in wrong:
                with_wrong += 1
                assert wrong[d.id] in d.text
                assert not alias_in(wrong[d.id], s.metadata["answers"] or ["-"])
                assert s.metadata["entity"] not in d.text.split(".")[0]  # a near miss's page
    assert with_wrong >= len(items)  # every item has near misses stating a wrong value


def test_counterfactual_differs_from_its_gold_only_in_the_span(items: list[Sample]) -> None:
    for s in items:
        if s.metadata["unanswerable"]:
            assert "counterfactual" not in s.metadata
            continue
        cf = Passage.model_validate(s.metadata["counterfactual"]["passage"])
        new = s.metadata["counterfactual"]["answer"]
        gold = next(p for p in passages_of(s) if p.id == cf.id.removesuffix("-cf"))
        old = s.metadata["answers"][0]
        assert gold.text.count(old) == 1 and cf.title == gold.title
        assert cf.text == gold.text.replace(old, new)
        assert not alias_in(cf.text, s.metadata["answers"]) and not alias_in(gold.text, [new])
        assert cf.kind == "counterfactual" and not cf.gold


def test_unanswerable_items_withheld_value_appears_nowhere(items: list[Sample]) -> None:
    unanswerable = [s for s in items if s.metadata["unanswerable"]]
    assert unanswerable
    for s in unanswerable:
        assert s.target is None and s.metadata["answers"] == []
        withheld = s.metadata["withheld"]
        texts = [p.text for p in passages_of(s) + _distractors(s)]
        texts += [c["text"] for c in s.metadata["claims"] if c["supported"]]
        assert passages_of(s) and not any(p.gold for p in passages_of(s))
        assert not any(alias_in(t, withheld) for t in texts), s.id


def test_claims_are_supported_exactly_when_the_passages_state_them(items: list[Sample]) -> None:
    kinds: Counter[bool] = Counter()
    for s in items:
        shown = [p.text for p in passages_of(s)]
        world = shown + [d.text for d in _distractors(s)]
        for c in s.metadata["claims"]:
            assert set(c) == {"text", "supported", "value"} and c["value"] in c["text"]
            assert s.metadata["entity"] in c["text"]
            if c["supported"]:
                assert any(c["value"] in t for t in shown)
            else:
                assert not any(alias_in(t, [c["value"]]) for t in world)
            kinds[c["supported"]] += 1
    assert kinds[True] > len(items) and kinds[False] == 2 * len(items)


def test_scoring_right_wrong_and_abstaining(items: list[Sample]) -> None:
    scorer = build_scorer("rag_outcome")

    def correct(s: Sample, text: str) -> float:
        out = SampleOutput(response=ModelResponse(text=text))
        return asyncio.run(scorer(s, out)).values["correct"]

    for s in items[:40]:
        if s.metadata["unanswerable"]:
            assert correct(s, "I don't know.") == 1.0
        else:
            assert correct(s, s.metadata["answers"][-1]) == 1.0
            assert correct(s, s.metadata["counterfactual"]["answer"]) == 0.0
            for w in s.metadata["wrong_answers"].values():
                assert correct(s, w) == 0.0

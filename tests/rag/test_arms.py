"""The degradation arms on a synthetic corpus: counts, positions and draws checked by hand."""

from __future__ import annotations

import pytest

from calipers.models import FakeModel
from calipers.runner import RunConfig, make_plan
from calipers.scorers import alias_in
from calipers.tasks.rag import Passage, RagArm, passages_of, rag_sample
from calipers.tasks.rag._arms import degrade, distractor_count
from calipers.types import ModelRequest, Sample
from tests.rag._arms_corpus import corpus, corpus_task

__all__ = ["corpus_task"]


def _one(s: Sample, pool: list[Sample], arm: RagArm) -> Sample:
    return degrade([s], pool, arm, None)[0]


def _ids(s: Sample) -> list[str]:
    return [p.id for p in passages_of(s)]


def _kinds(s: Sample) -> list[str]:
    return [p.kind for p in passages_of(s)]


def test_round_half_up() -> None:
    assert [distractor_count(x, 5) for x in (0.2, 0.4, 0.5, 0.6, 0.8, 0.9)] == [1, 2, 3, 3, 4, 5]
    assert distractor_count(0.3, 10) == 3 and distractor_count(0.25, 10) == 3


@pytest.mark.parametrize(("noise", "n_d"), [(0.2, 1), (0.4, 2), (0.6, 3), (0.8, 4)])
def test_noise_ratio_shows_each_gold_once_and_records_the_realised_ratio(
    noise: float, n_d: int
) -> None:
    pool = corpus(30)
    s = _one(pool[0], pool, RagArm(noise=noise))
    assert _kinds(s) == ["gold"] + ["distractor"] * n_d  # one gold passage: shown once
    ids = _ids(s)
    assert ids[0] == "p0" and len(set(ids)) == len(ids)
    arm = s.metadata["arm"]
    assert arm["passages"] == n_d + 1 and arm["gold_shown"] == 1 and arm["gold_position"] == 0
    assert arm["noise"] == pytest.approx(n_d / (n_d + 1))  # 0.2 of 5 slots: 1 of 2 shown
    assert s.input == pool[0].input and s.metadata["answers"] == pool[0].metadata["answers"]


def test_an_item_with_more_gold_than_slots_fills_the_gold_slots() -> None:
    golds = [Passage(id=f"g{j}", text=f"Town0 fact {j}", gold=True, kind="gold") for j in range(6)]
    s0 = rag_sample("multi", "Where?", golds, ["Town0"])
    s = _one(s0, [s0, *corpus(20)[1:]], RagArm(noise=0.4, k=5))
    assert _ids(s)[:3] == ["g0", "g1", "g2"] and _kinds(s)[3:] == ["distractor"] * 2
    assert s.metadata["arm"]["noise"] == pytest.approx(0.4)


def test_random_distractors_never_contain_an_alias_or_the_items_own_passage() -> None:
    trap = rag_sample(
        "trap", "Trap?", [Passage(id="trap", text="Visitors love Town0 in May.")], ["x"]
    )
    control = rag_sample("ctl", "Ctl?", [Passage(id="ctl", text="Visitors love May.")], ["y"])
    pool = [*corpus(8), trap, control]
    seen: set[str] = set()
    for seed in range(40):
        s = _one(pool[0], pool, RagArm(noise=0.8, seed=seed))
        seen.update(_ids(s)[1:])
        assert not any(alias_in(p.text, ["Town0"]) for p in passages_of(s)[1:])
    assert "ctl" in seen and "trap" not in seen and "p0" not in seen


def test_draws_are_seeded_per_item() -> None:
    pool = corpus(40)
    a = degrade(pool[:5], pool, RagArm(noise=0.6, seed=1), None)
    b = degrade(pool[:5], pool, RagArm(noise=0.6, seed=1), None)
    c = degrade(pool[:5], pool, RagArm(noise=0.6, seed=2), None)
    assert [_ids(s) for s in a] == [_ids(s) for s in b]
    assert [_ids(s) for s in a] != [_ids(s) for s in c]
    # the draw of an item does not depend on which other items are run with it
    assert _ids(degrade(pool[3:4], pool, RagArm(noise=0.6, seed=1), None)[0]) == _ids(a[3])


def _near_miss_pool() -> list[Sample]:
    near = rag_sample(
        "near",
        "Near?",
        [Passage(id="near", text="The fest0 festival parade of fest0 starts in Elsewhere.")],
        ["Elsewhere"],
    )
    answering = rag_sample(
        "ans",
        "Ans?",
        [Passage(id="ans", text="Tickets for the fest0 festival are sold in Town0.")],
        ["Tickets"],
    )
    return [*corpus(10), near, answering]


def test_hard_distractors_are_bm25_neighbours_without_an_alias() -> None:
    pool = _near_miss_pool()
    s = _one(pool[0], pool, RagArm(noise=0.4, distractor="hard"))
    # "near" shares fest0 twice and "festival"; "ans" shares more but says Town0, so it is out;
    # every corpus passage scores the same on "festival held" (equal length): pool order, p1.
    assert _ids(s) == ["p0", "near", "p1"] and _kinds(s) == ["gold", "hard", "hard"]


def test_hard_distractors_prefer_the_items_own_near_misses() -> None:
    given = Passage(id="given", text="The fest0 fair is in Nowhere.", kind="hard")
    base = _near_miss_pool()
    s0 = base[0].model_copy(
        update={"metadata": {**base[0].metadata, "distractors": [given.model_dump()]}}
    )
    s = _one(s0, [s0, *base[1:]], RagArm(noise=0.4, distractor="hard"))
    assert _ids(s) == ["p0", "given", "near"]


def test_gold_dropped_replaces_gold_in_place_and_keeps_the_count() -> None:
    pool = corpus(20)
    s = _one(pool[0], pool, RagArm(gold="drop"))
    assert _kinds(s) == ["distractor"] and s.metadata["arm"]["gold_shown"] == 0
    s = _one(pool[0], pool, RagArm(noise=0.4, gold="drop"))
    assert _kinds(s) == ["distractor"] * 3 and s.metadata["arm"]["answer_shown"] == 0


@pytest.mark.parametrize(
    ("position", "k", "index"),
    [("first", 5, 0), ("middle", 5, 2), ("last", 5, 4), ("middle", 4, 1)],
)
def test_gold_position(position: str, k: int, index: int) -> None:
    pool = corpus(20)
    s = _one(pool[0], pool, RagArm(position=position, k=k))
    kinds = _kinds(s)
    assert len(kinds) == k and kinds.index("gold") == index and kinds.count("gold") == 1
    assert s.metadata["arm"]["gold_position"] == index


def test_order_reverse_and_shuffled() -> None:
    pool = corpus(40)
    rel = degrade(pool[:1], pool, RagArm(noise=0.4, order="relevance"), None)[0]
    rev = degrade(pool[:1], pool, RagArm(noise=0.4, order="reverse"), None)[0]
    assert _ids(rev) == _ids(rel)[::-1] and rev.metadata["arm"]["gold_position"] == 2
    shuffled = degrade(pool[:30], pool, RagArm(noise=0.4, order="shuffled"), None)
    positions = {s.metadata["arm"]["gold_position"] for s in shuffled}
    assert positions == {0, 1, 2}  # 30 items, each of 3 positions drawn (chance of a miss < 1e-5)
    with pytest.raises(ValueError, match="choose one"):
        RagArm(position="first", order="reverse")


def test_k_shortens_the_oracle_list() -> None:
    ps = [Passage(id=f"x{j}", text=f"Town0 note {j}", gold=j == 1) for j in range(4)]
    s0 = rag_sample("k", "Where?", ps, ["Town0"])
    s = _one(s0, [s0], RagArm(k=2))
    assert _ids(s) == ["x0", "x1"] and s.metadata["arm"]["gold_position"] == 1


def test_unanswerable_items_get_only_distractors() -> None:
    u = rag_sample("u", "Where is nothing?", [], [], unanswerable=True)
    pool = [u, *corpus(10)]
    s = _one(u, pool, RagArm(position="middle"))
    assert _kinds(s) == ["distractor"] * 5 and s.metadata["arm"]["gold_position"] is None
    s = _one(u, pool, RagArm(noise=0.4))
    assert _kinds(s) == ["distractor"] * 2


def test_counterfactual_of_a_name_is_another_items_answer() -> None:
    pool = corpus(20)
    s = _one(pool[3], pool, RagArm(distractor="counterfactual"))
    cf = s.metadata["counterfactual"]
    sub = cf["answer"]
    assert sub in {f"Town{j}" for j in range(20) if j != 3}
    gold = passages_of(pool[3])[0]
    assert passages_of(s) == [
        Passage(
            id="p3~cf",
            title=gold.title,
            text=gold.text.replace("Town3", sub),
            kind="counterfactual",
        )
    ]
    assert cf["gold_id"] == "p3" and s.metadata["arm"]["counterfactual_shown"] is True


def test_counterfactual_substitute_has_the_answers_shape() -> None:
    def qa(i: str, answer: str) -> Sample:
        p = Passage(id=i, text=f"It is {answer} indeed.", gold=True)
        return rag_sample(i, "What?", [p], [answer])

    pool = [qa("a", "fertilization"), qa("b", "January 1, 1976"), qa("c", "Paris")]
    pool += [qa("d", "photosynthesis")]
    for seed in range(10):
        s = _one(pool[0], pool, RagArm(distractor="counterfactual", seed=seed))
        assert s.metadata["counterfactual"]["answer"] == "photosynthesis"


def test_counterfactual_of_a_year_is_a_nearby_year() -> None:
    gold = Passage(id="b", text="The bridge opened in 1932; by 1932 it was famous.", gold=True)
    s0 = rag_sample("year", "When did the bridge open?", [gold], ["1932"])
    for seed in range(20):
        s = _one(s0, [s0, *corpus(5)], RagArm(distractor="counterfactual", seed=seed))
        sub = s.metadata["counterfactual"]["answer"]
        assert sub != "1932" and 1917 <= int(sub) <= 1947
        assert passages_of(s)[0].text == gold.text.replace("1932", sub)


def test_a_task_given_counterfactual_is_used_as_given() -> None:
    pool = corpus(5)
    given = {"passage": Passage(id="cf", text="Held in Nowhere.").model_dump(), "answer": "Nowhere"}
    s0 = pool[0].model_copy(update={"metadata": {**pool[0].metadata, "counterfactual": given}})
    s = _one(s0, [s0, *pool[1:]], RagArm(distractor="counterfactual"))
    assert _ids(s) == ["cf"] and s.metadata["counterfactual"] == given


def test_an_item_without_an_alias_in_its_gold_gets_no_counterfactual() -> None:
    gold = Passage(id="g", text="It opened long ago.", gold=True)
    s0 = rag_sample("none", "When?", [gold], ["1932"])
    s = _one(s0, [s0, *corpus(5)], RagArm(distractor="counterfactual"))
    assert _ids(s) == ["g"] and "counterfactual" not in s.metadata
    assert s.metadata["arm"]["counterfactual_shown"] is False


def test_a_noise_arm_runs_through_the_plan(corpus_task: str) -> None:
    config = RunConfig(model="fake:echo", tasks=(corpus_task,), limit=4, rag=RagArm(noise=0.4, k=5))
    plan = make_plan(config, FakeModel())
    assert plan.tasks[0].methodology.rag_arm == {"noise": 0.4, "k": 5}
    for ps in plan.tasks[0].samples:
        assert ps.sample.metadata["arm"]["passages"] == 3
        req = ps.request
        assert isinstance(req, ModelRequest) and req.messages is not None
        assert "[3]" in req.messages[-1].content and "[4]" not in req.messages[-1].content

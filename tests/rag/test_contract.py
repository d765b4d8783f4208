"""The RAG contract: item layout, alias matching, the first outcome scorer, arms in a run."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from calipers.errors import ConfigError
from calipers.models import FakeModel
from calipers.runner import RunConfig, make_plan
from calipers.scorers import alias_in, build_scorer, matching_alias
from calipers.tasks import LoadContext, PromptTemplate, Task, register_task
from calipers.tasks.rag import (
    RAG_INSTRUCTION,
    RAG_TEMPLATE,
    Passage,
    RagArm,
    passages_of,
    rag_sample,
)
from calipers.types import ModelRequest, ModelResponse, Sample, SampleOutput


def _items(ctx: LoadContext) -> list[Sample]:
    out = [
        rag_sample(
            f"q{i}",
            f"What is the capital of country {i}?",
            [
                Passage(
                    id=f"p{i}",
                    title=f"Country {i}",
                    text=f"The capital is City{i}.",
                    gold=True,
                    kind="gold",
                )
            ],
            [f"City{i}", f"city {i}"],
        )
        for i in range(10)
    ]
    return out[: ctx.n] if ctx.n else out


def _task() -> Task:
    return Task(
        name="rag_contract",
        version="1",
        description="test",
        kind="generate",
        load=_items,
        scorers=(build_scorer("rag_outcome"),),
        prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
        tags=("rag",),
    )


@pytest.fixture
def rag_task() -> Iterator[str]:
    from calipers.tasks._registry import _TASKS

    register_task("rag_contract", _task)
    yield "rag_contract"
    _TASKS.pop("rag_contract")


def test_item_layout_and_context() -> None:
    s = _items(LoadContext())[3]
    assert s.target == "City3" and s.cluster == "q3"
    assert s.metadata["answers"] == ["City3", "city 3"]
    assert s.fields["context"] == "[1] Country 3\nThe capital is City3."
    assert passages_of(s)[0].gold
    with pytest.raises(ValueError, match="no answer alias"):
        rag_sample("x", "q?", [], [])
    u = rag_sample("u", "q?", [], [], unanswerable=True)
    assert u.target is None and u.metadata["unanswerable"]


def test_alias_matching_is_whole_token_and_normalised() -> None:
    assert matching_alias("It is The Eiffel Tower!", ["eiffel tower"]) == "eiffel tower"
    assert not alias_in("14 apples", ["4"])
    assert alias_in("about 4 apples", ["4"])
    assert not alias_in("anything", ["", "  "])


def _score(sample_index: int, text: str, **meta: object) -> dict[str, float]:
    s = _items(LoadContext())[sample_index]
    if meta:
        s = s.model_copy(update={"metadata": {**s.metadata, **meta}})
    out = SampleOutput(response=ModelResponse(text=text))
    values = asyncio.run(build_scorer("rag_outcome")(s, out)).values
    return {k: values[k] for k in ("correct", "abstained")}


def test_outcome_scorer_counts_abstention_right_only_where_it_is_right() -> None:
    assert _score(1, "City1") == {"correct": 1.0, "abstained": 0.0}
    assert _score(1, "I don't know.") == {"correct": 0.0, "abstained": 1.0}
    assert _score(1, "Paris") == {"correct": 0.0, "abstained": 0.0}
    assert _score(1, "I don't know.", unanswerable=True) == {"correct": 1.0, "abstained": 1.0}
    assert _score(1, "City1", unanswerable=True) == {"correct": 0.0, "abstained": 0.0}


def test_arm_labels_and_validation() -> None:
    assert RagArm().describe() == "clean" and RagArm().is_clean
    assert RagArm(noise=0.4, distractor="hard").describe() == "noise=0.4 hard"
    assert RagArm(fill=0.6).describe() == "fill=60%"
    with pytest.raises(ValueError, match="real retriever"):
        RagArm(index_gold=False)
    with pytest.raises(ValueError, match="one factor"):
        RagArm(fill=0.5, noise=0.2)


def test_clean_arm_plans_the_task_as_is_and_records_no_arm(rag_task: str) -> None:
    plan = make_plan(RunConfig(model="fake:echo", tasks=(rag_task,), rag=RagArm()), FakeModel())
    card = plan.tasks[0].methodology
    assert card.rag_arm is None and plan.total == 10
    req = plan.tasks[0].samples[0].request
    assert isinstance(req, ModelRequest) and req.messages is not None
    assert "[1] Country 0\nThe capital is City0." in req.messages[-1].content


def test_arms_refuse_a_task_without_passages() -> None:
    with pytest.raises(ConfigError, match="not a RAG task"):
        make_plan(
            RunConfig(model="fake:echo", tasks=("dyn_arithmetic",), rag=RagArm(noise=0.2)),
            FakeModel(),
        )


def test_fill_needs_a_window(rag_task: str) -> None:
    class NoWindow(FakeModel):
        def context_window(self) -> None:  # type: ignore[override]
            return None

    with pytest.raises(ConfigError, match="context window"):
        make_plan(RunConfig(model="fake:echo", tasks=(rag_task,), rag=RagArm(fill=0.5)), NoWindow())


def test_support_of_an_answer_by_passages() -> None:
    from calipers.scorers import detect_abstention, supported_by

    passages = ["The first prize went to Wilhelm Conrad Röntgen in 1901."]
    assert supported_by("Wilhelm Conrad Röntgen", passages)
    assert supported_by("It was Röntgen, Wilhelm Conrad", passages)  # 3 of 3 content words
    assert not supported_by("Marie Curie", passages)
    assert not supported_by("the", passages)
    assert detect_abstention("The passages do not contain the answer.")
    assert not detect_abstention("Röntgen.")

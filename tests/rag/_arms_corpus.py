"""A synthetic RAG corpus for the arm and retriever tests, every figure in it countable by hand.

Item ``i`` asks where the ``fest{i}`` festival is held; its one gold passage says ``Town{i}``
(aliases ``Town{i}`` and ``the town of Town{i}``). Passages are ``WORDS`` whitespace words long
(the fake model's tokens), made of the item's words and neutral padding.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from calipers.scorers import build_scorer
from calipers.tasks import LoadContext, PromptTemplate, Task, register_task
from calipers.tasks.rag import RAG_INSTRUCTION, RAG_TEMPLATE, Passage, rag_sample
from calipers.types import Sample

WORDS = 40
_PAD = [
    "and",
    "people",
    "walk",
    "along",
    "quiet",
    "streets",
    "near",
    "old",
    "stone",
    "houses",
    "while",
    "music",
    "plays",
]


def passage_text(i: int) -> str:
    head = f"The fest{i} festival is held every summer in Town{i} near the river.".split()
    return " ".join(head + [_PAD[j % len(_PAD)] for j in range(WORDS - len(head))]) + "."


def item(i: int, question: str | None = None) -> Sample:
    gold = Passage(id=f"p{i}", title=f"Fest{i}", text=passage_text(i), gold=True, kind="gold")
    return rag_sample(
        f"q{i}",
        question or f"Where is the fest{i} festival held?",
        [gold],
        [f"Town{i}", f"the town of Town{i}"],
    )


def corpus(n: int = 60) -> list[Sample]:
    return [item(i) for i in range(n)]


def _load(ctx: LoadContext) -> list[Sample]:
    out = corpus()
    return out[: ctx.n] if ctx.n else out


def _task() -> Task:
    return Task(
        name="rag_arms_corpus",
        version="1",
        description="synthetic RAG corpus",
        kind="generate",
        load=_load,
        scorers=(build_scorer("rag_outcome"),),
        prompt=PromptTemplate(instruction=RAG_INSTRUCTION, template=RAG_TEMPLATE),
        tags=("rag",),
    )


@pytest.fixture
def corpus_task() -> Iterator[str]:
    from calipers.tasks._registry import _TASKS

    register_task("rag_arms_corpus", _task)
    yield "rag_arms_corpus"
    _TASKS.pop("rag_arms_corpus")

"""A RAG item: a question, the passages shown with it, and what counts as its answer.

A RAG item is an ordinary :class:`~calipers.types.Sample` that keeps its parts in agreed
places, so arms (``_arms``), scorers (``rag_outcome``) and reports read them the same way:

- ``input``: the question; ``cluster``: the question's id (arms that show one question several
  times stay clustered by question);
- ``target``: the first answer alias, or ``None`` for an unanswerable item;
- ``fields["passages"]``: the passages shown, in order, as :class:`Passage` dicts;
  ``fields["context"]``: those passages formatted for the prompt (``{context}``);
- ``metadata["answers"]``: every accepted alias; ``metadata["unanswerable"]``: no passage of
  the item's world answers it (abstaining is the right answer);
- ``metadata["distractors"]`` (optional): item-specific near-miss passages known not to contain
  an alias (Passage dicts); ``metadata["wrong_answers"]``: distractor passage id -> the specific
  wrong value it states (Passage has no metadata field), for those that state one;
- ``metadata["counterfactual"]`` (optional): ``{"passage": Passage dict, "answer": str}``, the
  gold passage with the answer span swapped for ``answer``;
- ``metadata["answer_unknown"]`` (optional): no reference answer exists (an item from a trace
  or gateway traffic): correctness cannot be scored, abstention and support by the passages can;
- ``metadata["claims"]`` (optional, ``dyn_rag``): planted claims ``{"text", "supported"}``
  whose support by the passages is known exactly (for calibrating a claim judge);
- ``metadata["arm"]``: what the arm did to this item (set by ``apply_rag_arm``): realised noise
  ratio, gold position, realised fill, ...
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from calipers.types import Sample

__all__ = [
    "RAG_INSTRUCTION",
    "RAG_TEMPLATE",
    "Passage",
    "PassageKind",
    "answers_of",
    "format_context",
    "is_unanswerable",
    "passages_of",
    "rag_sample",
    "with_passages",
]

PassageKind = Literal[
    "gold",  # supports the answer
    "distractor",  # random: about something else
    "hard",  # near miss: close to the question, no answer alias in it
    "counterfactual",  # the gold passage with the answer span swapped
    "filler",  # irrelevant padding for context fill
    "retrieved",  # returned by a retriever or recorded in a trace; gold flag says if it answers
]

RAG_INSTRUCTION = (
    "Answer the question using only the passages below. Answer with a short phrase. If the "
    "passages do not contain the answer, reply exactly: I don't know."
)
RAG_TEMPLATE = "{context}\n\nQuestion: {input}\nAnswer:"


class Passage(BaseModel):
    """One passage. ``gold`` is true when it supports the item's answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    title: str = ""
    gold: bool = False
    kind: PassageKind = "retrieved"

    def render(self, number: int) -> str:
        head = f"[{number}]" + (f" {self.title}" if self.title else "")
        return f"{head}\n{self.text}"


def format_context(passages: Sequence[Passage]) -> str:
    """The passages as the prompt shows them: numbered, title first, a blank line between."""
    return "\n\n".join(p.render(i + 1) for i, p in enumerate(passages))


def passages_of(sample: Sample) -> list[Passage]:
    return [Passage.model_validate(p) for p in sample.fields.get("passages", [])]


def answers_of(sample: Sample) -> list[str]:
    return [str(a) for a in sample.metadata.get("answers", [])]


def is_unanswerable(sample: Sample) -> bool:
    return bool(sample.metadata.get("unanswerable"))


def with_passages(sample: Sample, passages: Sequence[Passage], **metadata: Any) -> Sample:
    """``sample`` showing ``passages`` (both ``passages`` and ``context`` fields), with
    ``metadata`` merged in."""
    fields = {
        **sample.fields,
        "passages": [p.model_dump() for p in passages],
        "context": format_context(passages),
    }
    meta = {**sample.metadata, **metadata} if metadata else sample.metadata
    return sample.model_copy(update={"fields": fields, "metadata": meta})


def rag_sample(
    id: str,
    question: str,
    passages: Iterable[Passage],
    answers: Sequence[str],
    *,
    unanswerable: bool = False,
    answer_unknown: bool = False,
    category: str | None = None,
    **metadata: Any,
) -> Sample:
    """A RAG item in the agreed layout (see the module docstring). ``answer_unknown``: no
    reference answer exists (traces); recorded as ``metadata["answer_unknown"]``."""
    answers = [a for a in answers if a]
    if not answers and not unanswerable and not answer_unknown:
        raise ValueError(f"RAG item {id!r} has no answer alias and is not unanswerable")
    if answer_unknown:
        metadata["answer_unknown"] = True
    base = Sample(
        id=id,
        input=question,
        target=answers[0] if answers and not unanswerable else None,
        category=category,
        cluster=id,
        metadata={"answers": list(answers), "unanswerable": unanswerable, **metadata},
    )
    return with_passages(base, list(passages))

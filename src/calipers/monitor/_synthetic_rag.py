"""Synthetic RAG traffic: questions about a seeded fictional world, the passages a retriever of
known recall returned for them, and a model that answers from the passages when it can.

The model never changes; only the retriever does. With the answer among the passages
(probability ``recall``) the model answers it (supported), except ``unsupported_with_answer``
of the time when it answers something else; without it, the model abstains
(``abstain_without_answer``) or makes an answer up (unsupported). So the unsupported-answer
rate is ``(1 - recall) (1 - abstain_without_answer) + recall * unsupported_with_answer``: with
the defaults 0.05 * 0.75 = 3.75%, and a retriever whose recall falls to 0.73 takes it to
0.27 * 0.75 = 20.25%: the week-one story of ``docs/monitor.md``.

Made-up answers and answer values are fresh words of the world, so whether a passage supports
an answer is known exactly (a value occurs in a passage only when that passage states it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from calipers.store import RAG_FIELD

__all__ = ["ABSTAIN_TEXT", "RAG_SYSTEM", "RagProfile", "RagQuestion", "rag_question"]

ABSTAIN_TEXT = "I don't know."
RAG_SYSTEM = (
    "Answer the question using only the passages. Answer with a short phrase. If the passages "
    "do not contain the answer, reply exactly: I don't know."
)
_SYLLABLES = (
    "zor", "vel", "quen", "mar", "tis", "bral", "dun", "kor", "lia", "sen", "thal", "ome",
    "riv", "gar", "nel", "pax", "ulm", "ister", "wyn", "fen",
)  # fmt: skip
_FACTS = (
    ("capital", "What is the capital of {e}?", "The capital of {e} is {v}."),
    ("founder", "Who founded {e}?", "{e} was founded by {v}."),
    ("river", "Which river flows through {e}?", "The river {v} flows through {e}."),
    ("currency", "What is the currency of {e}?", "The currency of {e} is the {v}."),
)


@dataclass(frozen=True)
class RagProfile:
    """The retriever's recall and the (fixed) model's behaviour; see the module docstring."""

    recall: float = 0.95
    k: int = 4
    abstain_without_answer: float = 0.25
    unsupported_with_answer: float = 0.0

    def replace(self, **changes: object) -> RagProfile:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def unsupported_rate(self) -> float:
        """The expected share of unsupported answers (refusals and errors aside)."""
        missing = (1 - self.recall) * (1 - self.abstain_without_answer)
        return missing + self.recall * self.unsupported_with_answer


@dataclass(frozen=True)
class RagQuestion:
    """One question, its answer, and the passages retrieved for it (``found``: the answer's
    passage is among them)."""

    question: str
    answer: str
    passages: list[dict[str, Any]]
    found: bool
    made_up: str

    def request(self) -> dict[str, Any]:
        """The chat request a RAG client sends through the gateway: the passages in the
        prompt and in ``calipers_rag``."""
        context = "\n\n".join(
            f"[{i + 1}] {p['title']}\n{p['text']}" for i, p in enumerate(self.passages)
        )
        return {
            "messages": [
                {"role": "system", "content": RAG_SYSTEM},
                {"role": "user", "content": f"{context}\n\nQuestion: {self.question}\nAnswer:"},
            ],
            "max_tokens": 32,
            RAG_FIELD: {"passages": self.passages},
        }

    def reply(self, rng: np.random.Generator, p: RagProfile) -> str:
        """The fixed model's answer given these passages."""
        if self.found:
            return (
                f"{self.made_up}."
                if rng.random() < p.unsupported_with_answer
                else f"{self.answer}."
            )
        return ABSTAIN_TEXT if rng.random() < p.abstain_without_answer else f"{self.made_up}."


def _word(rng: np.random.Generator) -> str:
    n = 2 + int(rng.integers(2))
    return "".join(_SYLLABLES[i] for i in rng.integers(len(_SYLLABLES), size=n)).capitalize()


def _fact(rng: np.random.Generator, entity: str, kind: int, value: str, pid: str) -> dict[str, Any]:
    return {"id": pid, "title": entity, "text": _FACTS[kind][2].format(e=entity, v=value)}


def rag_question(rng: np.random.Generator, p: RagProfile) -> RagQuestion:
    """One question and the ``k`` passages the retriever returned: the answer's passage with
    probability ``recall`` (at a random rank), else only passages about other entities."""
    entity, kind = _word(rng), int(rng.integers(len(_FACTS)))
    words = {entity}
    while len(words) < 2 * p.k + 3:
        words.add(_word(rng))
    others = sorted(words - {entity})
    answer, made_up, rest = others[0], others[1], others[2:]
    found = bool(rng.random() < p.recall)
    passages = [
        _fact(rng, rest[2 * i], int(rng.integers(len(_FACTS))), rest[2 * i + 1], f"doc-{i}")
        for i in range(p.k - int(found))
    ]
    if found:
        at = int(rng.integers(p.k))
        passages.insert(at, _fact(rng, entity, kind, answer, "doc-gold"))
    question = _FACTS[kind][1].format(e=entity)
    return RagQuestion(question, answer, passages, found, made_up)

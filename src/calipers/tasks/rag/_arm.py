"""An arm of a RAG stress test: one way the context is degraded.

A :class:`RagArm` changes which passages a RAG item is shown, never the question or its
answers; ``apply_rag_arm`` applies it to a task before planning (as ``apply_variant`` does for
presentation changes) and the methodology card records it, so an arm's run is never mistaken for
the clean one. ``calipers rag stress`` runs a grid of arms, each a stored run paired with the
clean arm by item.

The degradations, each on its own field (the default is the clean arm: the item's own
passages, as the task gives them):

- ``noise`` with ``distractor``: ``k`` passage slots, ``round(noise * k)`` of them distractors of
  the given type (``random``: passages about other questions; ``hard``: the nearest neighbours
  by the retriever that contain no answer alias; ``counterfactual``: the gold passage with the
  answer span swapped, shown instead of the gold), the other slots the item's gold passages
  (an item with fewer gold passages than slots shows each once, so its realised noise ratio,
  recorded in ``metadata["arm"]``, is above the nominal one);
- ``gold="drop"``: every gold passage replaced by a distractor (the right answer is to abstain);
- ``position``: one gold passage placed first, in the middle or last among ``k`` passages (the
  others distractors of type ``distractor``);
- ``order``: the shown passages in ``relevance`` order (the retriever's score, best first),
  ``reverse`` relevance order, or ``shuffled`` (seeded per item);
- ``fill``: the item's passages after irrelevant filler passages, so the whole request (chat
  template and the reserved output included, counted with the model's own tokenizer) fills
  that share of the model's context window; needs a :class:`PromptBudget`;
- ``retriever``: ``oracle`` (the task's passages) or a real retriever (``bm25``,
  ``embedding``) returning the top ``k`` of an index over every passage of the task, with the
  gold passages left out of the index when ``index_gold=False`` and the query rewritten by the
  perturbation ``query_noise`` (``typos``, ...) while the model still sees the question as
  asked.

``seed`` seeds every draw (distractors, filler, shuffles), per item.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from calipers.types import Sample

__all__ = ["DistractorType", "PromptBudget", "RagArm"]

DistractorType = Literal["random", "hard", "counterfactual"]


@dataclass(frozen=True)
class PromptBudget:
    """What a context-fill arm needs from the model: its window (tokens, prompt and output
    together) and ``count(sample)``, the tokens of the whole request the sample would make with
    the run's template and decoding: rendered prompt plus the reserved ``max_tokens``."""

    window: int
    count: Callable[[Sample], int]


class RagArm(BaseModel):
    """One degradation of the context (see the module docstring); ``RagArm()`` is clean."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    noise: float = Field(0.0, ge=0.0, lt=1.0)
    distractor: DistractorType = "random"
    k: int | None = Field(None, ge=1, description="Passages shown (None: the task's own)")
    gold: Literal["keep", "drop"] = "keep"
    position: Literal["first", "middle", "last"] | None = None
    order: Literal["relevance", "reverse", "shuffled"] | None = None
    fill: float | None = Field(None, gt=0.0, lt=1.0)
    retriever: Literal["oracle", "bm25", "embedding"] = "oracle"
    index_gold: bool = True
    query_noise: str | None = None
    seed: int = 0

    @model_validator(mode="after")
    def _consistent(self) -> RagArm:
        if self.retriever == "oracle" and (not self.index_gold or self.query_noise):
            raise ValueError(
                "index_gold=False and query_noise apply to a real retriever: "
                "set retriever to bm25 or embedding"
            )
        if self.position and self.order:
            raise ValueError("position and order both place the passages: choose one")
        if self.fill is not None and (self.noise or self.position or self.gold == "drop"):
            raise ValueError("a context-fill arm changes only the fill (one factor at a time)")
        return self

    @property
    def is_clean(self) -> bool:
        return self == RagArm(seed=self.seed)

    def describe(self) -> str:
        """A short label: ``noise=0.4 hard``, ``fill=60%``, ``clean``."""
        parts: list[str] = []
        if self.noise:
            parts.append(f"noise={self.noise:g} {self.distractor}")
        elif self.distractor != "random":
            parts.append(self.distractor)
        if self.gold == "drop":
            parts.append("gold dropped")
        if self.position:
            parts.append(f"gold {self.position}")
        if self.order:
            parts.append(f"order {self.order}")
        if self.k is not None:
            parts.append(f"k={self.k}")
        if self.fill is not None:
            parts.append(f"fill={100 * self.fill:g}%")
        if self.retriever != "oracle":
            parts.append(self.retriever)
            if not self.index_gold:
                parts.append("gold not indexed")
            if self.query_noise:
                parts.append(f"query {self.query_noise}")
        return " ".join(parts) or "clean"

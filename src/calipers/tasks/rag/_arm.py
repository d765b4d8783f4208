"""An arm of a RAG stress test: one way the context is degraded.

A :class:`RagArm` changes which passages a RAG item is shown, never the question or its
answers; ``apply_rag_arm`` applies it to a task before planning (as ``apply_variant`` does for
presentation changes) and the methodology card records it, so an arm's run is never mistaken for
the clean one. ``calipers rag stress`` runs a grid of arms, each a stored run paired with the
clean arm by item.

The degradations, each on its own field (the default is the clean arm: the item's own
passages, as the task gives them). Distractors and filler come from the pool (every passage of
every item of the task), never one of the item's own passages and never one whose title or text
contains a normalised answer alias of the item (``_distractors``, checked by
``find_violations``):

- ``noise`` with ``distractor``: ``k`` passage slots (5 when ``k`` is unset),
  ``round(noise * k)`` of them (halves rounded up) distractors of the given type (``random``:
  pool passages in a seeded random order; ``hard``: the item's own ``metadata["distractors"]``
  first, then the pool passages nearest the question by BM25), the other slots the item's gold
  passages (its own passages when it has no gold; the top retrieved ones with a real
  retriever). An item with fewer gold passages than slots shows each once, so its realised
  noise ratio (recorded in ``metadata["arm"]``) is above the nominal one. Gold first, then the
  distractors (hard ones nearest first), unless ``order`` says otherwise;
- ``distractor="counterfactual"``: the gold passage with the answer span swapped (the task's
  ``metadata["counterfactual"]``, else built by ``_counterfactual``: a number by another number,
  another answer by another item's answer) is shown instead of the gold passage it was made
  from, at any noise level (the noise slots then hold random distractors); it is recorded in
  the item's ``metadata["counterfactual"]`` (``passage``, ``answer``, ``gold_id``) for the
  scorer. An item where none can be made (unanswerable; no alias in its gold passage) shows its
  gold, and ``metadata["arm"]["counterfactual_shown"]`` says so;
- ``gold="drop"``: every gold passage, and any other shown passage with an answer alias,
  replaced in place by a distractor, the passage count kept (the right answer is to abstain);
- ``position``: one gold passage placed first, in the middle (index ``(k - 1) // 2``) or last
  among ``k`` passages (the others distractors of type ``distractor``); not with ``order``;
- ``order``: the shown passages in ``relevance`` order (as built: the item's or the
  retriever's passages best first, drawn distractors after them), ``reverse`` of that, or
  ``shuffled`` (seeded per item);
- ``k`` alone: the first ``k`` of the item's own passages (or the retriever's top ``k``);
- ``fill``: the item's passages after irrelevant filler passages, so the whole request (chat
  template and the reserved output included, counted with the model's own tokenizer) fills
  that share of the model's context window, to within a word below it (``_fill``); needs a
  :class:`PromptBudget`. The filler is one seeded sequence for the whole run (no passage of, and
  no answer of, any item of the run), so every prompt starts with the same passages and a
  prefix cache reuses them; an item whose own request is over the target is refused;
- ``retriever``: ``oracle`` (the task's passages) or a real retriever (``bm25``,
  ``embedding``) returning the top ``k`` (5 when unset) of an index over every passage of the
  task (built once per pool and retriever), with the gold passages left out of the index when
  ``index_gold=False`` and the query rewritten by the perturbation ``query_noise`` (``typos``,
  ...) while the model still sees the question as asked.

``seed`` seeds every draw (distractors, counterfactual substitutes, shuffles) per item, so an
item's passages do not depend on which other items run with it (the filler does: it leaves
out every answer of the run's items). ``metadata["arm"]`` records per item: ``passages``
(shown), ``gold_shown``, ``gold_position`` (index of the first gold passage, or None),
``noise`` (the share of shown passages that are not gold), ``answer_shown`` (shown passages
with an alias); a real
retriever's ``recall`` (gold shown / the item's gold) and ``query``; a fill arm's ``fill``
(realised), ``fill_target``, ``tokens``, ``window`` and ``filler_passages``.
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
    the run's template and decoding: rendered prompt plus the reserved ``max_tokens``.

    ``count_text`` (optional) counts a fragment of text with the same tokenizer: a fill arm
    estimates from fragment counts where to cut and checks the estimate with ``count``, so an
    item costs a few whole-request counts instead of a search of them. ``key`` (optional) names
    everything ``count`` depends on (model, template, system prompt, output reserve); with it,
    a degraded item set is reused when the same arm is planned again in one process."""

    window: int
    count: Callable[[Sample], int]
    count_text: Callable[[str], int] | None = None
    key: str | None = None


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

"""RAG traffic: what the model did with the passages its request carried (``calipers_rag``,
see ``calipers.store.rag_of``), judge-free, per answered call.

Each answered (2xx) call of a request that carries passages is one of:

- ``abstained``: the answer declines ("I don't know", "the passages do not contain ...":
  ``calipers.scorers.detect_abstention``);
- ``supported``: an answer some passage supports (``calipers.scorers.supported_by`` on the
  answer against each passage's title and text);
- ``unsupported``: an answer no passage supports: the hallucination the monitor watches;
- ``other``: an empty answer or a refusal ("I can't help with that": counted by the refusal
  rate, neither an answer nor an abstention from the passages).

The two rates per window and arm (:data:`RAG_METRICS`) are shares of every answered RAG call,
so abstained + supported + unsupported + other = 1, with Wilson intervals; the drift tests
compare the same 0/1 outcomes of the served calls with the reference period's. Both
heuristics suit short extractive answers; long free-form answers need a judge
(``calipers ab --scorer llm_judge:...``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from calipers.monitor._traffic import Exchange
from calipers.monitor._windows import arm_record, is_refusal
from calipers.scorers import detect_abstention, supported_by
from calipers.stats import wilson
from calipers.store import RAG_FIELD, TrafficRecord, rag_of
from calipers.types import Estimate

__all__ = [
    "RAG_METRICS",
    "RagAnswer",
    "carries_rag",
    "rag_answer",
    "rag_metrics",
    "rag_note",
]

RagAnswer = Literal["abstained", "supported", "unsupported", "other"]
RAG_METRICS: dict[str, str] = {
    "rag_unsupported_rate": "RAG: answers no passage supports (share of answered RAG calls)",
    "rag_abstention_rate": "RAG: abstentions (share of answered RAG calls)",
}


def carries_rag(ex: Exchange) -> bool:
    """The request came with a well-formed ``calipers_rag``."""
    return rag_of(ex.request) is not None


def rag_answer(ex: Exchange, rec: TrafficRecord | None) -> RagAnswer | None:
    """What ``rec``'s answer did with ``ex``'s passages; ``None`` when the request carries
    no passages or the call got no usable answer (an error is the error rate's business)."""
    if rec is None or not rec.ok:
        return None
    context = rag_of(ex.request)
    if context is None:
        return None
    text = (rec.response or "").strip()
    if detect_abstention(text):
        return "abstained"
    if not text or is_refusal(text):
        return "other"
    return "supported" if supported_by(text, context.texts) else "unsupported"


def _rate(outcomes: Sequence[RagAnswer], which: RagAnswer, confidence: float) -> Estimate:
    if not outcomes:
        return Estimate.empty("wilson", confidence)
    return wilson(sum(o == which for o in outcomes), len(outcomes), confidence)


def rag_metrics(
    exchanges: Sequence[Exchange], arm: str, confidence: float = 0.95
) -> dict[str, Estimate]:
    """The unsupported-answer and abstention rates of one arm's answered RAG calls (NaN with
    n = 0 when there are none)."""
    outcomes = [o for ex in exchanges if (o := rag_answer(ex, arm_record(ex, arm))) is not None]
    return {
        "rag_unsupported_rate": _rate(outcomes, "unsupported", confidence),
        "rag_abstention_rate": _rate(outcomes, "abstained", confidence),
    }


def rag_note(exchanges: Sequence[Exchange]) -> str | None:
    """What the report says about its RAG traffic (``None`` when there is none)."""
    carrying = sum(carries_rag(ex) for ex in exchanges)
    malformed = sum(RAG_FIELD in ex.request and not carries_rag(ex) for ex in exchanges)
    if not carrying and not malformed:
        return None
    note = (
        f"RAG: {carrying:,} of {len(exchanges):,} requests carry retrieved passages "
        f"({RAG_FIELD}); unsupported-answer and abstention rates are judged judge-free "
        "(supported_by, detect_abstention) on their answered calls"
    )
    if malformed:
        note += f"; {malformed:,} more carry a malformed {RAG_FIELD} and are left out"
    return note

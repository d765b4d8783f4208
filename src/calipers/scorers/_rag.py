"""``rag_outcome``: what a model did with the passages it was shown, judge-free.

A first version (the RAG issue's contract): ``correct`` (an alias in the answer, or an
abstention where abstaining is right) and ``abstained``. The full outcome set (unsupported
answer, distractor adopted, counterfactual followed) is added on top of this.
"""

from __future__ import annotations

import re

from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._rag_text import matching_alias
from calipers.types import Sample, SampleOutput, Score

__all__ = ["detect_abstention", "rag_outcome"]

_ABSTAIN = re.compile(
    r"\b(i don'?t know|i do not know|cannot (?:be )?(?:answer|determine|find)|can't (?:answer|"
    r"determine|find)|(?:passages?|context|documents?) (?:does|do) not (?:contain|mention|say|"
    r"provide)|no (?:information|answer) (?:in|about|on)|not (?:mentioned|stated|provided) in)",
    re.IGNORECASE,
)


def detect_abstention(text: str) -> bool:
    """The answer declines to answer from the passages ("I don't know", "the passages do not
    contain ...")."""
    return bool(_ABSTAIN.search(text))


def _gold_shown(sample: Sample) -> bool:
    return any(p.get("gold") for p in sample.fields.get("passages", []))


@scorer("rag_outcome", metrics=("correct", "abstained"))
def rag_outcome() -> ScoreFn:
    """Correct: an answer alias occurs in the reply when a gold passage was shown and the item
    is answerable; an abstention when no gold passage was shown or the item is unanswerable
    (the right answer is then to abstain). Abstained: the reply declines."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        text = output.text or ""
        abstained = detect_abstention(text)
        answerable = not sample.metadata.get("unanswerable") and _gold_shown(sample)
        alias = matching_alias(text, sample.metadata.get("answers", []))
        correct = (alias is not None and not abstained) if answerable else abstained
        return Score(
            values={"correct": float(correct), "abstained": float(abstained)},
            answer=text.strip(),
        )

    return score

"""``rag_outcome``: what a model did with the passages it was shown, judge-free.

Every outcome is read from the item itself: the passages shown (``fields["passages"]``, each
with ``gold`` and ``kind``), the answer aliases, ``unanswerable``, the distractors' known wrong
answers (``metadata["distractors"]``) and the counterfactual swap (``metadata["counterfactual"]``).
The reply is cut to its short answer first (:func:`short_answer`). Definitions (docs/rag-judge.md):

- ``correct``: answerable item (not ``unanswerable`` and a gold passage shown): an alias in the
  answer; otherwise: an abstention (abstaining is then the right answer).
- ``abstained``: the answer declines (:func:`detect_abstention`).
- ``unsupported``: answered, and the answer is supported by no shown passage (an alias match
  with a gold passage shown counts as supported): a hallucination.
- ``distractor_adopted`` (items showing a passage that is neither gold nor counterfactual):
  answered, no alias in the answer, and either a shown distractor's known wrong answer is in it
  or the answer is supported by those passages and by no gold or counterfactual one.
- ``counterfactual_followed`` (items showing the counterfactual passage): the answer holds the
  swapped-in answer and no true alias (one that the swapped-in answer does not itself hold).

A metric that does not apply to an item is left out of its ``Score.values``; the run summary
then averages over the items where it applies.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from calipers.scorers._base import ScoreFn, scorer
from calipers.scorers._rag_text import alias_in, matching_alias, supported_by
from calipers.scorers._text import normalize_answer
from calipers.types import Sample, SampleOutput, Score

__all__ = ["detect_abstention", "rag_outcome", "rag_outcome_values", "short_answer"]

_ABSTAIN = re.compile(
    r"\b(i don'?t know|i do not know|cannot (?:be )?(?:answer|determine|find)|can't (?:answer|"
    r"determine|find)|(?:passages?|context|documents?) (?:does|do) not (?:contain|mention|say|"
    r"provide)|no (?:information|answer) (?:in|about|on)|not (?:mentioned|stated|provided) in)",
    re.IGNORECASE,
)
_PREFIX = re.compile(
    r"^\W*(?:(?:the\s+)?(?:(?:final|short)\s+)?answer|a)\s*(?:is)?\s*[:：]\**\s*", re.IGNORECASE
)
OUTCOMES = ("correct", "abstained", "unsupported", "distractor_adopted", "counterfactual_followed")


def detect_abstention(text: str) -> bool:
    """The answer declines to answer from the passages ("I don't know", "the passages do not
    contain ...")."""
    return bool(_ABSTAIN.search(text))


def short_answer(text: str) -> str:
    """The answer a reply gives: its first non-empty line, without an ``Answer:`` (``A:``,
    ``Final answer:``) prefix or markdown emphasis; a bare prefix line gives the next line."""
    for line in text.splitlines():
        ans = _PREFIX.sub("", line.strip(), count=1).strip().strip("*_` ").strip()
        if ans:
            return ans
    return ""


def _passage_text(p: Mapping[str, Any]) -> str:
    return f"{p.get('title') or ''}\n{p.get('text') or ''}"


def _wrong_answers(sample: Sample, shown_ids: set[str], others: Sequence[str]) -> list[str]:
    """Known wrong answers of the item's distractors that are shown: by passage id, or (no id
    recorded) when the wrong answer occurs in a shown non-gold passage."""
    found = []
    for d in sample.metadata.get("distractors") or []:
        if not isinstance(d, Mapping):
            continue
        meta = d.get("metadata")
        wrong = d.get("wrong_answer") or (
            meta.get("wrong_answer") if isinstance(meta, Mapping) else None
        )
        body = d.get("passage")
        body = body if isinstance(body, Mapping) else d
        if not isinstance(wrong, str) or not wrong.strip():
            continue
        pid = body.get("id")
        if (pid is not None and str(pid) in shown_ids) or (
            pid is None and any(alias_in(t, [wrong]) for t in others)
        ):
            found.append(wrong)
    return found


def _counterfactual(sample: Sample, passages: Sequence[Mapping[str, Any]]) -> str | None:
    """The swapped-in answer when the item's counterfactual passage is shown, else None."""
    cf = sample.metadata.get("counterfactual")
    if not isinstance(cf, Mapping) or not isinstance(cf.get("answer"), str):
        return None
    cf_id = (cf.get("passage") or {}).get("id") if isinstance(cf.get("passage"), Mapping) else None
    shown = any(
        p.get("kind") == "counterfactual" or (cf_id is not None and p.get("id") == cf_id)
        for p in passages
    )
    return str(cf["answer"]) if shown else None


def rag_outcome_values(sample: Sample, text: str) -> tuple[dict[str, float], dict[str, Any]]:
    """(the outcome values that apply to ``sample``, what they were read from) for the reply
    ``text`` (see the module docstring)."""
    passages: list[Mapping[str, Any]] = list(sample.fields.get("passages") or [])
    answer = short_answer(text)
    cf_answer = _counterfactual(sample, passages)
    cf_ids = {str(p.get("id")) for p in passages if p.get("kind") == "counterfactual"}
    gold = [_passage_text(p) for p in passages if p.get("gold")]
    cf = [_passage_text(p) for p in passages if not p.get("gold") and str(p.get("id")) in cf_ids]
    others = [
        _passage_text(p) for p in passages if not p.get("gold") and str(p.get("id")) not in cf_ids
    ]
    abstained = detect_abstention(answer)
    answered = not abstained and bool(normalize_answer(answer))
    alias = matching_alias(answer, sample.metadata.get("answers") or []) if answered else None
    answerable = bool(gold) and not sample.metadata.get("unanswerable")
    supported = answered and (
        (alias is not None and bool(gold)) or supported_by(answer, gold + cf + others)
    )
    if sample.metadata.get("answer_unknown"):  # a trace: no reference answer, no gold flags
        unsupported = answered and not supported_by(answer, [_passage_text(p) for p in passages])
        values = {"abstained": float(abstained), "unsupported": float(unsupported)}
        return values, {"short_answer": answer, "answer_unknown": True}
    values = {
        "correct": float(alias is not None if answerable else abstained),
        "abstained": float(abstained),
        "unsupported": float(answered and not supported),
    }
    wrong: list[str] = []
    if others:
        shown_ids = {str(p.get("id")) for p in passages if not p.get("gold")}
        wrong = [w for w in _wrong_answers(sample, shown_ids, others) if alias_in(answer, [w])]
        only_others = supported_by(answer, others) and not supported_by(answer, gold + cf)
        adopted = answered and alias is None and (bool(wrong) or only_others)
        values["distractor_adopted"] = float(adopted)
    if cf_answer is not None:
        followed = alias_in(answer, [cf_answer]) and (alias is None or alias_in(cf_answer, [alias]))
        values["counterfactual_followed"] = float(answered and followed)
    details = {
        "short_answer": answer,
        "alias": alias,
        "answerable": answerable,
        "gold_shown": bool(gold),
        "wrong_answer": wrong[0] if wrong else None,
        "counterfactual_answer": cf_answer,
    }
    return values, details


@scorer("rag_outcome", metrics=OUTCOMES)
def rag_outcome() -> ScoreFn:
    """Judge-free RAG outcomes: correct (an alias, or an abstention where abstaining is right),
    abstained, unsupported (an answer no shown passage supports), distractor adopted,
    counterfactual followed; the last two only on items showing such passages."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        values, details = rag_outcome_values(sample, output.text or "")
        return Score(values=values, answer=details["short_answer"], metadata=details)

    return score

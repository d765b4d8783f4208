"""Text scorers: exact match, SQuAD-style normalized match, and regex extraction."""

from __future__ import annotations

import re
import string

from calipers.errors import ConfigError
from calipers.scorers._base import ScoreFn, scorer
from calipers.types import Sample, SampleOutput, Score

__all__ = ["exact_match", "normalize_answer", "normalized_match", "regex_match"]

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalization: lowercase, drop ASCII punctuation, drop the articles a/an/the,
    collapse whitespace. ``"The  Eiffel-Tower!"`` becomes ``"eiffeltower"``."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _contains(haystack: str, needle: str) -> bool:
    """Whole-token containment of normalized texts: ``"4"`` is not in ``"14 apples"``."""
    if not needle:
        return not haystack
    return f" {needle} " in f" {haystack} "


@scorer("exact_match", metrics=("exact_match",))
def exact_match(*, ignore_case: bool = False) -> ScoreFn:
    """The stripped output equals the stripped target (optionally ignoring case)."""

    def fold(text: str) -> str:
        text = text.strip()
        return text.casefold() if ignore_case else text

    async def score(sample: Sample, output: SampleOutput) -> Score:
        answer = output.text.strip()
        ok = fold(answer) == fold(sample.target_text)
        return Score(values={"exact_match": float(ok)}, answer=answer)

    return score


@scorer("normalized_match", metrics=("match",))
def normalized_match(*, contains: bool = False) -> ScoreFn:
    """SQuAD-normalized output equals (or, with ``contains``, contains) the normalized target.

    Containment is by whole tokens: a target "4" is not found in "14 apples"."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        got = normalize_answer(output.text)
        want = normalize_answer(sample.target_text)
        ok = _contains(got, want) if contains else got == want
        return Score(values={"match": float(ok)}, answer=output.text.strip())

    return score


@scorer("regex_match", metrics=("match",))
def regex_match(
    *, pattern: str, group: int = 1, ignore_case: bool = True, last: bool = False
) -> ScoreFn:
    """A regex capture from the output, SQuAD-normalized, equals the normalized target.

    ``group`` of the first (with ``last``, the last) match of ``pattern`` is the answer. No
    match scores 0. A pattern that does not compile is a ConfigError at construction."""
    try:
        rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as e:
        raise ConfigError(
            f"Bad regex {pattern!r} for scorer 'regex_match': {e}.",
            hint="Use Python `re` syntax; the answer is taken from capture group `group`.",
        ) from None
    if not 0 <= group <= rx.groups:
        raise ConfigError(
            f"regex_match group={group}, but pattern {pattern!r} has {rx.groups} group(s).",
            hint="Use group=0 for the whole match, or add a capture group to the pattern.",
        )

    async def score(sample: Sample, output: SampleOutput) -> Score:
        matches = list(rx.finditer(output.text))
        if not matches:
            return Score(values={"match": 0.0}, answer=None)
        answer = (matches[-1] if last else matches[0]).group(group) or ""
        ok = normalize_answer(answer) == normalize_answer(sample.target_text)
        return Score(values={"match": float(ok)}, answer=answer)

    return score

"""Answer-alias matching shared by RAG tasks (validity of distractor pools) and RAG scorers."""

from __future__ import annotations

from collections.abc import Iterable

from calipers.scorers._text import _contains, normalize_answer

__all__ = ["alias_in", "content_tokens", "matching_alias", "supported_by"]


def matching_alias(text: str, aliases: Iterable[str]) -> str | None:
    """The first alias that occurs in ``text`` as whole normalised tokens (SQuAD
    normalisation: case, punctuation and articles ignored; ``"4"`` is not in ``"14"``)."""
    hay = normalize_answer(text)
    for alias in aliases:
        needle = normalize_answer(alias)
        if needle and _contains(hay, needle):
            return alias
    return None


def alias_in(text: str, aliases: Iterable[str]) -> bool:
    """Whether any alias occurs in ``text`` (see :func:`matching_alias`)."""
    return matching_alias(text, aliases) is not None


_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "how",
        "as",
        "not",
        "no",
    ]
)


def content_tokens(text: str) -> list[str]:
    """The normalised words of ``text`` that carry content (stopwords dropped)."""
    return [w for w in normalize_answer(text).split() if w not in _STOP]


def supported_by(answer: str, passages: Iterable[str], *, min_overlap: float = 0.8) -> bool:
    """Whether a short answer is supported by a passage, judge-free: the normalised answer
    occurs in a passage as whole tokens, or (longer answers) at least ``min_overlap`` of its
    content words occur in one passage. An answer with no content words is not supported."""
    words = content_tokens(answer)
    if not words:
        return False
    needle = normalize_answer(answer)
    for text in passages:
        hay = normalize_answer(text)
        if _contains(hay, needle):
            return True
        vocab = set(hay.split())
        if sum(w in vocab for w in words) / len(words) >= min_overlap:
            return True
    return False

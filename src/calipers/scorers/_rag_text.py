"""Answer-alias matching shared by RAG tasks (validity of distractor pools) and RAG scorers."""

from __future__ import annotations

from collections.abc import Iterable

from calipers.scorers._text import _contains, normalize_answer

__all__ = ["alias_in", "matching_alias"]


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

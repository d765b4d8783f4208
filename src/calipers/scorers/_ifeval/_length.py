"""``length_constraints:*``: words, sentences and paragraphs (counted as ``_text`` says)."""

from __future__ import annotations

from calipers.scorers._ifeval._base import Args, checker, compare
from calipers.scorers._ifeval._text import (
    count_sentences,
    count_words,
    divider_paragraphs,
    first_word,
    paragraphs,
)

__all__ = ["nth_paragraph_first_word", "number_paragraphs", "number_sentences", "number_words"]


@checker("length_constraints:number_words")
def number_words(response: str, args: Args) -> bool:
    return compare(count_words(response), args.relation("relation"), args.integer("num_words"))


@checker("length_constraints:number_sentences")
def number_sentences(response: str, args: Args) -> bool:
    n = count_sentences(response)
    return compare(n, args.relation("relation"), args.integer("num_sentences"))


@checker("length_constraints:number_paragraphs")
def number_paragraphs(response: str, args: Args) -> bool:
    """Exactly ``num_paragraphs`` paragraphs separated by the markdown divider ``***``."""
    parts = divider_paragraphs(response)
    return parts is not None and len(parts) == args.integer("num_paragraphs")


@checker("length_constraints:nth_paragraph_first_word")
def nth_paragraph_first_word(response: str, args: Args) -> bool:
    """Exactly ``num_paragraphs`` blank-line-separated paragraphs, and paragraph
    ``nth_paragraph`` (1-based) starts with ``first_word`` (case-insensitive)."""
    paras = paragraphs(response)
    nth = args.integer("nth_paragraph")
    if len(paras) != args.integer("num_paragraphs") or not 1 <= nth <= len(paras):
        return False
    return first_word(paras[nth - 1]) == args.text("first_word").strip().lower()

"""``change_case:*``, ``startend:*`` and ``combination:*``.

``english_lowercase`` / ``english_capital`` also require the response to be English, as the
reference implementation does; a response the language detector cannot place (no evidence
either way) is not failed for its language. Capital words are the words of ``_text.words``
whose letters are all uppercase (``NASA``, ``I``, ``DON'T``; not ``2024``).
"""

from __future__ import annotations

import re

from calipers.scorers._ifeval._base import Args, checker, compare
from calipers.scorers._ifeval._text import words

__all__ = [
    "capital_word_frequency",
    "end_checker",
    "english_capital",
    "english_lowercase",
    "quotation",
    "repeat_prompt",
    "two_responses",
]

_QUOTES = (('"', '"'), ("“", "”"))


def _english_or_unknown(response: str, args: Args) -> bool:
    return args.detect_language(response) in (None, "en")


@checker("change_case:english_lowercase")
def english_lowercase(response: str, args: Args) -> bool:
    """English, with no uppercase letter (and at least one lowercase one)."""
    return response.islower() and _english_or_unknown(response, args)


@checker("change_case:english_capital")
def english_capital(response: str, args: Args) -> bool:
    """English, all in capital letters (no lowercase letter, at least one uppercase one)."""
    return response.isupper() and _english_or_unknown(response, args)


@checker("change_case:capital_word_frequency")
def capital_word_frequency(response: str, args: Args) -> bool:
    """The number of all-capital words is ``capital_relation`` ``capital_frequency``."""
    n = sum(1 for w in words(response) if w.isupper())
    return compare(n, args.relation("capital_relation"), args.integer("capital_frequency"))


@checker("startend:end_checker")
def end_checker(response: str, args: Args) -> bool:
    """The response ends with ``end_phrase`` (case-insensitive; surrounding white space and a
    closing double quote are ignored), nothing after it."""
    text = response.strip().strip('"”').rstrip().lower()
    return text.endswith(args.text("end_phrase").strip().lower())


@checker("startend:quotation")
def quotation(response: str, args: Args) -> bool:
    """The whole response is wrapped in double quotation marks (straight or curly)."""
    text = response.strip()
    return len(text) > 1 and any(text[0] == a and text[-1] == b for a, b in _QUOTES)


@checker("combination:repeat_prompt")
def repeat_prompt(response: str, args: Args) -> bool:
    """The response starts with the request ``prompt_to_repeat`` word for word (case and
    surrounding white space ignored)."""
    return response.strip().lower().startswith(args.text("prompt_to_repeat").strip().lower())


@checker("combination:two_responses")
def two_responses(response: str, args: Args) -> bool:
    """Exactly two different responses separated by six asterisks ``******``; an empty part
    is allowed only before the first or after the last separator."""
    parts = re.split(r"\*{6}", response)
    kept: list[str] = []
    for i, p in enumerate(parts):
        if p.strip():
            kept.append(p.strip())
        elif 0 < i < len(parts) - 1:
            return False
    return len(kept) == 2 and kept[0] != kept[1]

"""How IFEval responses are cut into words, sentences and paragraphs.

Words: a run of letters, digits and combining marks (any script: the vowel signs of
Devanagari, Tamil or Thai are part of a word, not breaks in it), starting with a letter or
digit, which may continue through one apostrophe or hyphen: ``don't``, ``well-known`` and
``3-4`` are one word each; punctuation, markdown and underscores are not words. (The
reference implementation counts ``\\w+`` runs: ``don't`` is two words there, and a Hindi
word splits at each vowel sign.)

Sentences: a sentence ends at ``.``, ``!``, ``?``, ``...``, ``।`` or ``؟`` (repeated,
optionally followed by closing quotes or brackets) that is followed by white space or the end
of the text. A period does not end a sentence after a title or common abbreviation (``Mr.``,
``Dr.``, ``e.g.``, ``vs.``...), after a single capital letter (the initial in ``J. Smith``),
after an acronym with inner periods (``U.S.``); a period or ellipsis does not end one when
the next word starts in lowercase.
Decimal numbers never split (no space follows their period). Line breaks are not boundaries,
so a heading without a period joins the next sentence. Text after the last terminator counts
as a sentence when it contains a word.

Paragraphs: blocks separated by one or more blank lines (``nth_paragraph_first_word``), or
by the markdown divider ``***`` (``number_paragraphs``), as each instruction says.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

__all__ = [
    "count_sentences",
    "count_words",
    "divider_paragraphs",
    "first_word",
    "paragraphs",
    "sentences",
    "word_chars",
    "words",
]


def _marks() -> str:
    """A regex class body with every combining mark (categories Mn, Mc, Me) of the BMP: the
    ``re`` module has no ``\\p{M}``, and ``\\w`` does not match these."""
    ranges: list[tuple[int, int]] = []
    for cp in range(0x300, min(sys.maxunicode, 0xFFFF) + 1):
        if unicodedata.category(chr(cp)).startswith("M"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(f"\\u{a:04x}-\\u{b:04x}" if a != b else f"\\u{a:04x}" for a, b in ranges)


@functools.cache
def word_chars() -> str:
    """One character of a word: a letter, a digit or a combining mark. Built on first use:
    scanning the BMP takes ~40 ms, which every ``calipers run`` would pay at import."""
    return rf"(?:[^\W_]|[{_marks()}])"


@functools.cache
def _word() -> re.Pattern[str]:
    return re.compile(rf"[^\W_]{word_chars()}*(?:['’\-]{word_chars()}+)*")


_END = re.compile(r"(?:\.\.\.|…|[.!?।؟])+[\"'”’)\]]*(?=\s|$)")
_ABBREVIATIONS = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "dr",
        "prof",
        "sr",
        "jr",
        "st",
        "vs",
        "e.g",
        "i.e",
        "cf",
        "approx",
        "fig",
        "mt",
        "ft",
        "gen",
        "col",
        "lt",
        "sgt",
        "capt",
        "rev",
        "hon",
    }
)
_ACRONYM = re.compile(r"(?:[A-Za-z]\.){2,}$")


def words(text: str) -> list[str]:
    return _word().findall(text)


def count_words(text: str) -> int:
    return len(words(text))


def _is_boundary(text: str, end: re.Match[str]) -> bool:
    mark = end.group(0).rstrip("\"'”’)]")
    following = text[end.end() :].lstrip()
    if mark.strip(".…"):
        return True  # ! ? । ؟ (alone or with periods) always end a sentence
    if following and following[0].islower():
        return False  # "approx. five", "Yes... it was": the sentence goes on
    if mark != ".":
        return True  # an ellipsis before a capital
    token = text[: end.start()].rsplit(None, 1)[-1] if text[: end.start()].strip() else ""
    token = token.lstrip("\"'“‘([*_")
    if token.lower() in _ABBREVIATIONS:
        return False
    if len(token) == 1 and token.isupper():
        return False  # an initial
    return not _ACRONYM.match(token + ".")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, as the module docstring defines them."""
    out: list[str] = []
    start = 0
    for m in _END.finditer(text):
        if _is_boundary(text, m):
            out.append(text[start : m.end()].strip())
            start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if _word().search(s)]


def count_sentences(text: str) -> int:
    return len(sentences(text))


def paragraphs(text: str) -> list[str]:
    """Non-empty blocks separated by blank lines."""
    return [p.strip() for p in re.split(r"\n[ \t]*\n", text) if p.strip()]


def divider_paragraphs(text: str) -> list[str] | None:
    """Blocks separated by ``***``; None when a block between two dividers is empty (the
    structure is broken). An empty block before the first or after the last divider is
    allowed and dropped."""
    parts = re.split(r"\*\*\*", text)
    for i, p in enumerate(parts):
        if not p.strip() and 0 < i < len(parts) - 1:
            return None
    return [p.strip() for p in parts if p.strip()]


def first_word(paragraph: str) -> str:
    """The paragraph's first word, lowercased, with leading quotes and markdown removed."""
    m = _word().search(paragraph)
    return m.group(0).lower() if m else ""

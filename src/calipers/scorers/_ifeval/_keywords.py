"""``keywords:*``, ``punctuation:no_comma`` and ``detectable_content:*``.

Keyword matching is case-insensitive. ``existence`` and ``frequency`` match the keyword as a
substring, as the reference implementation does (``"schedule"`` also counts in
``"schedules"``); ``forbidden_words`` matches whole words only (``"rock"`` is not found in
``"rocket"``).
"""

from __future__ import annotations

import re

from calipers.errors import DataError
from calipers.scorers._ifeval._base import Args, checker, compare

__all__ = [
    "existence",
    "forbidden_words",
    "frequency",
    "letter_frequency",
    "no_comma",
    "number_placeholders",
    "postscript",
]

_PLACEHOLDER = re.compile(r"\[[^\[\]\n]*[^\s\[\]][^\[\]\n]*\]")


def _occurrences(keyword: str, response: str) -> int:
    return len(re.findall(re.escape(keyword.strip()), response, flags=re.IGNORECASE))


@checker("keywords:existence")
def existence(response: str, args: Args) -> bool:
    """Every keyword of ``keywords`` appears."""
    return all(_occurrences(k, response) > 0 for k in args.texts("keywords"))


@checker("keywords:frequency")
def frequency(response: str, args: Args) -> bool:
    """``keyword`` appears ``relation`` (at least / less than) ``frequency`` times."""
    n = _occurrences(args.text("keyword"), response)
    return compare(n, args.relation("relation"), args.integer("frequency"))


@checker("keywords:forbidden_words")
def forbidden_words(response: str, args: Args) -> bool:
    """None of ``forbidden_words`` appears as a whole word."""
    return not any(
        re.search(rf"(?<!\w){re.escape(w.strip())}(?!\w)", response, flags=re.IGNORECASE)
        for w in args.texts("forbidden_words")
    )


@checker("keywords:letter_frequency")
def letter_frequency(response: str, args: Args) -> bool:
    """The character ``letter`` (case-insensitive) occurs ``let_relation`` ``let_frequency``
    times."""
    letter = args.text("letter").lower()
    if len(letter) != 1:
        return False
    n = response.lower().count(letter)
    return compare(n, args.relation("let_relation"), args.integer("let_frequency"))


@checker("punctuation:no_comma")
def no_comma(response: str, args: Args) -> bool:
    """No comma at all (the ASCII one or the full-width ``，``)."""
    return "," not in response and "，" not in response


@checker("detectable_content:number_placeholders")
def number_placeholders(response: str, args: Args) -> bool:
    """At least ``num_placeholders`` square-bracket placeholders with text inside, on one
    line: ``[name]``, ``[street address]``."""
    return len(_PLACEHOLDER.findall(response)) >= args.integer("num_placeholders")


def _postscript_pattern(marker: str) -> str:
    """The reference implementation's pattern for ``marker`` (stripped): ``P.P.S`` and
    ``P.S.`` have their own; any other marker is used, lowercased, as a regular expression."""
    if marker == "P.P.S":
        return r"\s*p\.\s?p\.\s?s.*$"
    if marker == "P.S.":
        return r"\s*p\.\s?s\..*$"
    return r"\s*" + marker.lower() + r".*$"


@checker("detectable_content:postscript")
def postscript(response: str, args: Args) -> bool:
    """The lowercased reply contains the marker anywhere, as the reference implementation
    checks (``PostscriptChecker`` of IFEval, also lm-eval 0.4.13): ``P.S.`` matches
    ``p.s.`` / ``p. s.`` (so also inside ``P.P.S.``), ``P.P.S`` matches ``p.p.s`` with
    optional spaces; it need not start a line, nor come at the end."""
    pattern = _postscript_pattern(args.text("postscript_marker").strip())
    try:
        return re.search(pattern, response.lower(), flags=re.MULTILINE) is not None
    except re.error as e:
        raise DataError(
            f"detectable_content:postscript: the marker is not a valid regular "
            f"expression, as the reference uses it ({e})."
        ) from None

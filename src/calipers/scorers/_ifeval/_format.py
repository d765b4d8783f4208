"""``detectable_format:*``: JSON, titles, bullets, sections, fixed answers, highlights."""

from __future__ import annotations

import json
import re

from calipers.scorers._ifeval._base import Args, checker

__all__ = [
    "CONSTRAINED_RESPONSES",
    "constrained_response",
    "count_highlights",
    "json_format",
    "multiple_sections",
    "number_bullet_lists",
    "number_highlighted_sections",
    "title",
]

CONSTRAINED_RESPONSES = ("My answer is yes.", "My answer is no.", "My answer is maybe.")
_FENCE = re.compile(r"^```[ \t]*(?:json)?[ \t]*\n?(.*?)\n?```$", re.DOTALL | re.IGNORECASE)
_TITLE = re.compile(r"<<([^\n]+?)>>")
_BULLET = re.compile(r"^[ \t]*[*-][ \t]+\S", re.MULTILINE)
# Markdown emphasis: the opening marker is not followed by a space, the closing one not
# preceded by one (so a "* " bullet is not the start of a highlight).
_BOLD = re.compile(r"\*\*(?!\s)([^\n*]+?)(?<!\s)\*\*")
_ITALIC = re.compile(r"(?<!\*)\*(?!\s)([^\n*]+?)(?<!\s)\*(?!\*)")


@checker("detectable_format:json_format")
def json_format(response: str, args: Args) -> bool:
    """The whole response parses as JSON, optionally inside one ``` (or ```json) fence."""
    text = response.strip()
    if m := _FENCE.match(text):
        text = m.group(1).strip()
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@checker("detectable_format:title")
def title(response: str, args: Args) -> bool:
    """A title in double angular brackets, ``<<like this>>``, with some text inside."""
    return any(t.strip() for t in _TITLE.findall(response))


@checker("detectable_format:number_bullet_lists")
def number_bullet_lists(response: str, args: Args) -> bool:
    """Exactly ``num_bullets`` markdown bullet lines: a line starting (after indentation)
    with ``*`` or ``-`` and a space. Bold text or a ``---`` rule is not a bullet."""
    return len(_BULLET.findall(response)) == args.integer("num_bullets")


@checker("detectable_format:multiple_sections")
def multiple_sections(response: str, args: Args) -> bool:
    """At least ``num_sections`` section headers: the ``section_spliter`` word (case as
    given) followed by a number, e.g. ``SECTION 1``."""
    splitter = args.text("section_spliter").strip()
    headers = re.findall(rf"(?<!\w){re.escape(splitter)}\s?\d+", response)
    return len(headers) >= args.integer("num_sections")


@checker("detectable_format:constrained_response")
def constrained_response(response: str, args: Args) -> bool:
    """The response contains one of the fixed answers ("My answer is yes." ...)."""
    return any(c in response for c in CONSTRAINED_RESPONSES)


def count_highlights(response: str) -> int:
    """Markdown-highlighted spans on one line, ``*italic*`` or ``**bold**``, with text in
    them."""
    bold = [h for h in _BOLD.findall(response) if h.strip()]
    italic = [h for h in _ITALIC.findall(_BOLD.sub(" ", response)) if h.strip()]
    return len(bold) + len(italic)


@checker("detectable_format:number_highlighted_sections")
def number_highlighted_sections(response: str, args: Args) -> bool:
    """At least ``num_highlights`` highlighted spans (``count_highlights``)."""
    return count_highlights(response) >= args.integer("num_highlights")

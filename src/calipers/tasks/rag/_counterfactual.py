"""Counterfactual passages: the gold passage with the answer span swapped.

The item's ``metadata["counterfactual"]`` is used when the task gives one (``dyn_rag``).
Otherwise one is built from the first gold passage that contains an answer alias: every
occurrence of every alias (title and text, case-insensitive, whole words) is replaced by one
substitute answer of the same kind, a number by another number (a year by a nearby year), any
other answer by another item's answer of the same rough shape where there is one (with or
without digits, capitalised or not: a name for a name, a common noun for a common noun). A
substitute never contains an alias of the item, never occurs in the gold passage already, and
the swapped passage must contain no alias; an item where that cannot be done (no gold passage
with an alias, unanswerable) gets none.

The result is ``{"passage": Passage dict, "answer": substitute, "gold_id": id of the gold
passage it was made from}``; ``_arms`` records it in the item's ``metadata["counterfactual"]``
so the scorer can tell "counterfactual followed" (the answer is the substitute).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from calipers.scorers import alias_in
from calipers.tasks.rag._item import answers_of, is_unanswerable
from calipers.tasks.rag._pool import Pool, gold_passages, shown_text
from calipers.types import Sample

__all__ = ["counterfactual_for", "is_number", "swap_aliases"]

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text.strip().replace(",", "")) is not None


def swap_aliases(text: str, aliases: Sequence[str], substitute: str) -> str:
    """``text`` with every occurrence of an alias (whole words, case-insensitive, any run of
    whitespace between its words; longest alias first) replaced by ``substitute``."""
    parts = [
        r"\s+".join(re.escape(w) for w in a.split())
        for a in sorted({a.strip() for a in aliases if a.strip()}, key=len, reverse=True)
    ]
    if not parts:
        return text
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")(?!\w)", re.IGNORECASE)
    return pattern.sub(lambda _m: substitute, text)


def counterfactual_for(item: Sample, pool: Pool, rng: random.Random) -> dict[str, Any] | None:
    """The item's counterfactual (given by the task, else built; see the module docstring)."""
    given = item.metadata.get("counterfactual")
    if isinstance(given, dict) and "passage" in given:
        return given
    aliases = answers_of(item)
    if is_unanswerable(item) or not aliases:
        return None
    for gold in gold_passages(item):
        if not alias_in(shown_text(gold), aliases):
            continue
        sub = _substitute(aliases, shown_text(gold), pool, rng)
        if sub is None:
            return None
        swapped = gold.model_copy(
            update={
                "id": f"{gold.id}~cf",
                "text": swap_aliases(gold.text, aliases, sub),
                "title": swap_aliases(gold.title, aliases, sub),
                "gold": False,
                "kind": "counterfactual",
            }
        )
        if alias_in(shown_text(swapped), aliases) or not alias_in(swapped.text, [sub]):
            continue  # the alias occurs in a form the swap does not reach (normalisation)
        return {"passage": swapped.model_dump(), "answer": sub, "gold_id": gold.id}
    return None


def _substitute(
    aliases: Sequence[str], gold_text: str, pool: Pool, rng: random.Random
) -> str | None:
    first = next(a for a in aliases if a.strip())
    if is_number(first):
        candidates = _numbers(float(first.replace(",", "")), first, rng)
    else:
        candidates = [a for a in pool.answers if not is_number(a)]
        rng.shuffle(candidates)
        candidates.sort(key=lambda c: _shape(c) != _shape(first))  # same shape first
    for c in candidates:
        if (
            c.strip()
            and not alias_in(c, aliases)
            and not any(alias_in(a, [c]) for a in aliases)
            and not alias_in(gold_text, [c])
        ):
            return c
    return None


def _shape(answer: str) -> tuple[bool, bool]:
    """A rough kind of a non-numeric answer: has a digit (a date, a model name), starts with a
    capital (a name) or not (a common noun)."""
    return any(ch.isdigit() for ch in answer), answer.strip()[:1].isupper()


def _numbers(value: float, text: str, rng: random.Random) -> list[str]:
    """Other numbers like ``value``: a year moves by 1-15 years, an integer by up to half
    of itself (at least 1..3), a decimal is scaled, keeping its decimals."""
    if "." in text:
        decimals = len(text.split(".")[1])
        return [f"{value * rng.uniform(0.5, 1.5):.{decimals}f}" for _ in range(20)]
    n = int(value)
    if 1000 <= n <= 2100 and len(text.strip()) == 4:
        return [str(n + rng.choice((-1, 1)) * rng.randint(1, 15)) for _ in range(20)]
    spread = max(3, n // 2)
    out = [n + rng.choice((-1, 1)) * rng.randint(1, spread) for _ in range(20)]
    return [str(m) for m in out if m >= 0]

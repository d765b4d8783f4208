"""Validity of a degraded RAG item set: the distractors really do not answer, and a
counterfactual passage really is its gold passage with only the answer swapped.

:func:`find_violations` checks, for every item:

- no shown passage of kind ``distractor``, ``hard`` or ``filler``, and no passage of the item's
  ``metadata["distractors"]``, contains a normalised answer alias of the item (title or text);
- the item's ``metadata["counterfactual"]`` passage contains its swapped ``answer``, contains no
  alias, and differs from a gold passage of the item only where the gold passage says an alias
  and the counterfactual says the answer (:func:`differs_only_in_answer`: the two passages
  aligned token by token, independently of how the counterfactual was made).

The gold passages are those of the item as the task gives it (``pool``, by item id), since a
degraded item may no longer show its gold.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from calipers.scorers import alias_in
from calipers.tasks.rag._item import Passage, answers_of, passages_of
from calipers.tasks.rag._pool import gold_passages, shown_text
from calipers.types import Sample

__all__ = ["Violation", "differs_only_in_answer", "find_violations"]

Rule = Literal["alias in distractor", "counterfactual"]
_TOKEN = re.compile(r"\w+|[^\w\s]")
_MUST_NOT_ANSWER = ("distractor", "hard", "filler")


@dataclass(frozen=True)
class Violation:
    item: str
    passage: str
    rule: Rule
    detail: str


def find_violations(
    items: Sequence[Sample], pool: Sequence[Sample] | None = None
) -> list[Violation]:
    """Every violation in ``items`` (see the module docstring); ``pool`` holds the items as the
    task gives them (default: ``items`` themselves)."""
    originals = {s.id: s for s in (pool if pool is not None else items)}
    out: list[Violation] = []
    for item in items:
        out += _distractor_violations(item)
        out += _counterfactual_violations(item, originals.get(item.id, item))
    return out


def _distractor_violations(item: Sample) -> list[Violation]:
    aliases = answers_of(item)
    shown = [p for p in passages_of(item) if p.kind in _MUST_NOT_ANSWER]
    given = [Passage.model_validate(d) for d in item.metadata.get("distractors") or []]
    return [
        Violation(item.id, p.id, "alias in distractor", f"{p.kind} passage contains an answer")
        for p in [*shown, *given]
        if alias_in(shown_text(p), aliases)
    ]


def _counterfactual_violations(item: Sample, original: Sample) -> list[Violation]:
    cf = item.metadata.get("counterfactual")
    if not isinstance(cf, dict):
        return []
    passage = Passage.model_validate(cf["passage"])
    answer = str(cf.get("answer", ""))
    aliases = answers_of(item)
    text = shown_text(passage)

    def bad(detail: str) -> list[Violation]:
        return [Violation(item.id, passage.id, "counterfactual", detail)]

    if alias_in(text, aliases):
        return bad("the counterfactual passage still contains an answer alias")
    if not alias_in(text, [answer]):
        return bad(f"the counterfactual passage does not contain its answer {answer!r}")
    golds = gold_passages(original)
    if not any(differs_only_in_answer(shown_text(g), text, aliases, answer) for g in golds):
        return bad("the counterfactual passage differs from every gold passage beyond the span")
    return []


def differs_only_in_answer(gold: str, swapped: str, aliases: Sequence[str], answer: str) -> bool:
    """Whether ``swapped`` is ``gold`` with one or more alias occurrences replaced by
    ``answer`` and nothing else changed. Both are split into words and punctuation marks and
    aligned left to right: a step either matches equal tokens (case ignored) or reads an alias
    in ``gold`` against ``answer`` in ``swapped`` (each compared normalised, as alias matching
    does). Independent of how the counterfactual was made."""
    g, c = _tokens(gold), _tokens(swapped)
    width = max((len(_TOKEN.findall(a)) for a in [*aliases, answer]), default=0)
    alias_ends = _phrase_ends(gold, g, list(aliases), width)
    answer_ends = _phrase_ends(swapped, c, [answer], width)
    todo, seen = [(0, 0, False)], {(0, 0, False)}
    while todo:
        i, j, swapped_any = todo.pop()
        if i == len(g) and j == len(c):
            if swapped_any:
                return True
            continue
        steps = (
            [(i + 1, j + 1, swapped_any)]
            if i < len(g) and j < len(c) and g[i][0] == c[j][0]
            else []
        )
        steps += [(e, f, True) for e in alias_ends(i) for f in answer_ends(j)]
        for step in steps:
            if step not in seen:
                seen.add(step)
                todo.append(step)
    return False


def _tokens(text: str) -> list[tuple[str, tuple[int, int]]]:
    return [(m.group(0).lower(), m.span()) for m in _TOKEN.finditer(text)]


def _phrase_ends(
    text: str, tokens: list[tuple[str, tuple[int, int]]], phrases: list[str], width: int
) -> Callable[[int], list[int]]:
    """``ends(i)``: every ``e`` such that tokens ``i:e`` read as one of ``phrases``."""

    @functools.cache
    def ends(i: int) -> list[int]:
        out = []
        for e in range(i + 1, min(len(tokens), i + width + 1) + 1):
            piece = text[tokens[i][1][0] : tokens[e - 1][1][1]]
            if any(_same(piece, [p]) for p in phrases):
                out.append(e)
        return out

    return ends


def _same(text: str, aliases: list[str]) -> bool:
    """Normalised equality: each contains the other as whole tokens."""
    return bool(text) and alias_in(text, aliases) and all(alias_in(a, [text]) for a in aliases)

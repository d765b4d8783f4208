"""Validity of a degraded RAG item set: the distractors really do not answer, and a
counterfactual passage really is its gold passage with only the answer swapped.

:func:`find_violations` checks, for every item:

- no shown passage of kind ``distractor``, ``hard`` or ``filler``, and no passage of the item's
  ``metadata["distractors"]``, contains a normalised answer alias of the item (title or text);
- the item's ``metadata["counterfactual"]`` passage contains its swapped ``answer``, contains no
  alias, and differs from a gold passage of the item only where the gold passage says an alias
  and the counterfactual says the answer. This is checked by a word diff of the two passages,
  independently of how the counterfactual was made: every differing stretch (widened over equal
  neighbouring words, for an answer that shares words with an alias) must read as an alias on
  the gold side and as the answer on the other.

The gold passages are those of the item as the task gives it (``pool``, by item id), since a
degraded item may no longer show its gold.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
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
    """Whether ``swapped`` is ``gold`` with some alias occurrences replaced by ``answer`` and
    nothing else changed (compared word by word; case and punctuation inside a span ignored as
    alias matching ignores them)."""
    g, c = _tokens(gold), _tokens(swapped)
    ops = difflib.SequenceMatcher(None, [t for t, _ in g], [t for t, _ in c], autojunk=False)
    regions = [op for op in ops.get_opcodes() if op[0] != "equal"]
    if not regions:
        return False
    width = max((len(_TOKEN.findall(a)) for a in [*aliases, answer]), default=0)
    return all(_explained(gold, swapped, g, c, op[1:], aliases, answer, width) for op in regions)


def _tokens(text: str) -> list[tuple[str, tuple[int, int]]]:
    return [(m.group(0).lower(), m.span()) for m in _TOKEN.finditer(text)]


def _explained(
    gold: str,
    swapped: str,
    g: list[tuple[str, tuple[int, int]]],
    c: list[tuple[str, tuple[int, int]]],
    span: tuple[int, int, int, int],
    aliases: Sequence[str],
    answer: str,
    width: int,
) -> bool:
    """Whether the differing stretch, widened by up to ``width`` equal words on either side,
    reads as an alias in ``gold`` and as ``answer`` in ``swapped``."""
    i1, i2, j1, j2 = span
    for left in range(min(i1, j1, width) + 1):
        for right in range(min(len(g) - i2, len(c) - j2, width) + 1):
            gs = _slice(gold, g, i1 - left, i2 + right)
            cs = _slice(swapped, c, j1 - left, j2 + right)
            if _same(cs, [answer]) and any(_same(gs, [a]) for a in aliases):
                return True
    return False


def _slice(text: str, tokens: list[tuple[str, tuple[int, int]]], a: int, b: int) -> str:
    return text[tokens[a][1][0] : tokens[b - 1][1][1]] if b > a else ""


def _same(text: str, aliases: list[str]) -> bool:
    """Normalised equality: each contains the other as whole tokens."""
    return bool(text) and alias_in(text, aliases) and all(alias_in(a, [text]) for a in aliases)

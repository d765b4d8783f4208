"""Text helpers shared by the memorisation probes: the canonical item text, seeded controls
(word shuffles), half splits, answer normalisation and ROUGE-L."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Sequence

import numpy as np

from calipers.types import Sample

__all__ = [
    "LETTERS",
    "MASK",
    "item_rng",
    "item_text",
    "normalise",
    "prefix_match",
    "rouge_l_f1",
    "shuffle_words",
    "split_half",
    "words",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
MASK = "[MASK]"
_WORD = re.compile(r"\S+")
_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def item_text(sample: Sample, *, mask: int | None = None) -> str:
    """An item as it is published: the question, then one ``A. option`` line per option
    (multiple choice). ``mask`` replaces that option's text with ``[MASK]``."""
    if not sample.choices:
        return sample.input
    lines = [f"{LETTERS[i]}. {MASK if i == mask else c}" for i, c in enumerate(sample.choices)]
    return "\n".join([sample.input, *lines])


def item_rng(seed: int, item_id: str, salt: str) -> np.random.Generator:
    """A generator for one item's controls: depends on the seed, the item id and the probe
    (``salt``), not on the item's position, so a subset gets the same controls."""
    digest = hashlib.sha256(f"{salt}\x00{item_id}".encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "big")])


def shuffle_words(text: str, rng: np.random.Generator, *, tries: int = 10) -> str:
    """The words of ``text`` in a random order, put back into the same whitespace skeleton (so
    length, vocabulary and line breaks are kept). A permutation that changes the text is
    preferred; a text whose words cannot be reordered differently comes back unchanged."""
    spans = [m.span() for m in _WORD.finditer(text)]
    tokens = [text[a:b] for a, b in spans]
    if len(set(tokens)) < 2:
        return text
    order = list(range(len(tokens)))
    for _ in range(tries):
        order = [int(i) for i in rng.permutation(len(tokens))]
        if any(tokens[j] != tokens[i] for i, j in enumerate(order)):
            break
    out, last = [], 0
    for (a, b), j in zip(spans, order, strict=True):
        out += [text[last:a], tokens[j]]
        last = b
    return "".join([*out, text[last:]])


def split_half(text: str, *, min_words: int = 8) -> tuple[str, str] | None:
    """``(first, rest)`` with ``first + rest == text``: ``first`` ends at the end of word
    ``n // 2`` and ``rest`` keeps its leading whitespace. None when the text has fewer than
    ``min_words`` words."""
    spans = [m.span() for m in _WORD.finditer(text)]
    if len(spans) < max(2, min_words):
        return None
    cut = spans[len(spans) // 2 - 1][1]
    return text[:cut], text[cut:]


def words(text: str) -> list[str]:
    """Lower-cased words without punctuation: what ROUGE-L and the prefix match compare (as
    the ``rouge-score`` package tokenises; articles are kept, they are part of verbatim text)."""
    return text.lower().translate(_PUNCT).split()


def normalise(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD-style answer match)."""
    lowered = _ARTICLES.sub(" ", text.lower().translate(_PUNCT))
    return " ".join(lowered.split())


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, one row at a time)."""
    prev = [0] * (len(b) + 1)
    for x in a:
        row = [0]
        for j, y in enumerate(b):
            row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
        prev = row
    return prev[-1]


def rouge_l_f1(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (Lin 2004, beta = 1) over :func:`words`: with ``L`` the longest common
    subsequence, ``P = L / len(candidate)``, ``R = L / len(reference)``, ``F = 2PR / (P + R)``.
    0 when either side has no words."""
    c, r = words(candidate), words(reference)
    lcs = _lcs(c, r) if c and r else 0
    if lcs == 0:
        return 0.0
    p, rec = lcs / len(c), lcs / len(r)
    return 2 * p * rec / (p + rec)


def prefix_match(candidate: str, reference: str) -> float:
    """Share of the reference's :func:`words` that the candidate reproduces verbatim from its
    start: ``len(longest common word prefix) / len(reference words)``; 0 for an empty
    reference."""
    c, r = words(candidate), words(reference)
    n = 0
    for x, y in zip(c, r, strict=False):
        if x != y:
            break
        n += 1
    return n / len(r) if r else 0.0

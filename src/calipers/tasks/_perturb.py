"""Seeded perturbations of a question, the way real users write: typos, casing, stray
whitespace, missing context, two questions in one message, an irrelevant sentence first.

Each perturbation is a pure function of the text and a ``random.Random`` seeded by
``(seed, item id)``, so a perturbed run is reproducible and its items pair with the clean
run's. Digits are never touched (a typo in a number would change a math problem's answer).
Plugins add perturbations through entry point group ``calipers.perturbations``
(:func:`register_perturbation`); the built-ins below are declared there too.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Literal

from calipers._util.hashing import json_hash
from calipers._util.registry import Plugins, Registry

__all__ = [
    "PERTURBATIONS",
    "Perturbation",
    "PerturbationFn",
    "list_perturbations",
    "perturb_text",
    "register",
    "register_perturbation",
]

Perturbation = Literal[
    "typos", "case", "whitespace", "missing_context", "two_questions", "distractor"
]
PERTURBATIONS: tuple[Perturbation, ...] = (
    "typos",
    "case",
    "whitespace",
    "missing_context",
    "two_questions",
    "distractor",
)

_KEYBOARD = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
_NEIGHBOURS = {
    c: "".join(
        row2[j]
        for row2 in _KEYBOARD[max(0, r - 1) : r + 2]
        for j in (i - 1, i, i + 1)
        if 0 <= j < len(row2) and row2[j] != c
    )
    for r, row in enumerate(_KEYBOARD)
    for i, c in enumerate(row)
}
_DISTRACTORS = (
    "My cousin just adopted a cat and named it after a river.",
    "I am typing this on my phone on the train, sorry.",
    "The weather here has been strange all week.",
    "I had pasta for lunch, which was fine.",
    "Our office moved to the third floor last month.",
)
_WORD = re.compile(r"[A-Za-z]{4,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)  # keep the first and last letters
    kind = rng.choice(("swap", "drop", "double", "neighbour"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    near = _NEIGHBOURS.get(word[i].lower(), "")
    return word[:i] + (rng.choice(near) if near else word[i]) + word[i + 1 :]


def _typos(text: str, rng: random.Random, _others: Sequence[str]) -> str:
    """About one word in eight of four or more letters gets one typo (at least one word)."""
    words = list(_WORD.finditer(text))
    if not words:
        return text
    picked = {m.start() for m in words if rng.random() < 1 / 8} or {rng.choice(words).start()}
    return _WORD.sub(lambda m: _typo(m.group(0), rng) if m.start() in picked else m.group(0), text)


def _case(text: str, rng: random.Random, _others: Sequence[str]) -> str:
    return text.lower()


def _whitespace(text: str, rng: random.Random, _others: Sequence[str]) -> str:
    """Double spaces between some words, a space before some punctuation, stray newlines."""
    out = re.sub(r" ", lambda _m: "  " if rng.random() < 0.2 else " ", text)
    out = re.sub(
        r"(?<=\w)([?,.])", lambda m: " " + m.group(1) if rng.random() < 0.3 else m.group(1), out
    )
    return "\n " + out + "  \n"


def _missing_context(text: str, rng: random.Random, _others: Sequence[str]) -> str:
    """The first sentence dropped when there are three or more (the question stays; the
    answer may no longer follow, which is what users who leave context out cause)."""
    sentences = _SENTENCE_END.split(text.strip())
    return " ".join(sentences[1:]) if len(sentences) >= 3 else text


def _two_questions(text: str, rng: random.Random, others: Sequence[str]) -> str:
    """Another item's question appended: the model must still answer the first."""
    pool = [o for o in others if o != text]
    return f"{text}\nAlso, unrelated: {rng.choice(pool)}" if pool else text


def _distractor(text: str, rng: random.Random, _others: Sequence[str]) -> str:
    return f"{rng.choice(_DISTRACTORS)} {text}"


# ``fn(text, rng, others)``: ``text`` perturbed with draws from ``rng`` only; ``others`` are
# the other items' texts.
PerturbationFn = Callable[[str, random.Random, Sequence[str]], str]
_perturbations: Registry[PerturbationFn] = Registry(
    "perturbation", Plugins("calipers.perturbations")
)


def register_perturbation(name: str, fn: PerturbationFn) -> None:
    _perturbations.add(name, fn)


def list_perturbations() -> list[str]:
    """Every perturbation's name, built-ins and plugins' (:data:`PERTURBATIONS`: built-ins)."""
    return _perturbations.names()


def register() -> None:
    """The built-ins (named by calipers' own entry points)."""
    for name, fn in zip(
        PERTURBATIONS,
        (_typos, _case, _whitespace, _missing_context, _two_questions, _distractor),
        strict=True,
    ):
        register_perturbation(name, fn)


def perturb_text(
    kind: str, text: str, *, seed: int, item_id: str, others: Sequence[str] = ()
) -> str:
    """``text`` perturbed by ``kind``, reproducibly for ``(seed, item_id)``. ``others`` are
    the other items' texts (for ``two_questions``). Raises UnknownNameError for an unknown
    kind."""
    fn = _perturbations.get(kind)
    rng = random.Random(json_hash([kind, seed, item_id]))
    return fn(text, rng, others)

"""Planted failure categories: failing samples whose judge notes are noisy paraphrases of
their category, with a known share of notes written for another category on purpose.

A note is put together from parts: how the category's mistake is said (several wordings,
which share few words), what it bears on (words of that kind of mistake), and sometimes a
consequence, a filler shared by every category ("the answer", "wrong") in front."""

from __future__ import annotations

import numpy as np

PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "arithmetic": (
        ("arithmetic error", "calculation mistake", "miscalculated", "arithmetic slip",
         "computed wrongly", "calculation error"),
        ("in a multiplication", "in the sum", "in an intermediate step", "when adding numbers",
         "while dividing", "in the subtraction"),
        ("", "", "so the total is off", "giving a wrong number"),
    ),
    "format": (
        ("ignored the requested format", "did not follow the format", "wrong output format",
         "formatting instruction ignored", "broke the required format", "format not followed"),
        ("for the JSON output", "of a bulleted list", "for the reply layout",
         "with the word limit", "in the output structure", "asked for in the instructions"),
        ("", "", "so the output cannot be parsed", "though the content is fine"),
    ),
    "refusal": (
        ("refused", "declined", "would not answer", "unnecessary refusal of",
         "over-refused", "said no to"),
        ("a harmless request", "a benign question", "a safe request",
         "an innocent question", "a legitimate task", "a harmless task"),
        ("", "", "citing safety for no reason", "claiming it is dangerous"),
    ),
    "invented": (
        ("invented", "hallucinated", "made up", "fabricated", "stated as fact",
         "asserted without support"),
        ("a citation", "facts not in the context", "details not in the source",
         "a nonexistent study", "unsupported claims", "a fake reference"),
        ("", "", "presented as true", "that the context contradicts"),
    ),
}  # fmt: skip
FILLER = ("", "", "", "the answer ", "wrong: ", "the model ")
CATEGORIES = tuple(PARTS)


def note_for(category: str, rng: np.random.Generator) -> str:
    said, about, then = PARTS[category]
    parts = [
        FILLER[rng.integers(len(FILLER))] + said[rng.integers(len(said))],
        about[rng.integers(len(about))],
        then[rng.integers(len(then))],
    ]
    return " ".join(p for p in parts if p)


def planted_notes(
    per_category: int, wrong_rate: float, seed: int
) -> tuple[list[str], list[int], list[str]]:
    """(the category of each sample, the index of the category its note was written for, the
    note), shuffled. A share ``wrong_rate`` of notes (on average) describe another category
    than their sample's: the judge's planted mistakes."""
    rng = np.random.default_rng(seed)
    truth, written, notes = [], [], []
    for c, name in enumerate(CATEGORIES):
        for _i in range(per_category):
            w = c
            if rng.random() < wrong_rate:
                w = int(rng.choice([j for j in range(len(CATEGORIES)) if j != c]))
            truth.append(name)
            written.append(w)
            notes.append(note_for(CATEGORIES[w], rng))
    order = rng.permutation(len(notes))
    return [truth[i] for i in order], [written[i] for i in order], [notes[i] for i in order]

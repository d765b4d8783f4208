"""The fixed texts of the probes: neutral filler turns, re-ask paraphrase templates, the
challenge, the instructions of the recollection probe (IFEval's code-checkable ones), and how
a word problem is cut into sentence shards. Every choice among them is a hash of the item's
id: the same item gets the same text in every run."""

from __future__ import annotations

import re

from calipers._util.hashing import json_hash

__all__ = [
    "CHALLENGE",
    "CHALLENGE_OPEN",
    "FILLERS",
    "LETTER_INSTRUCTION",
    "PARAPHRASES",
    "RECOLLECTION_INSTRUCTIONS",
    "RECOLLECTION_PREFIX",
    "pick",
    "split_shards",
]

# Neutral turns: short, unrelated to any benchmark item, answerable in a line.
FILLERS = (
    "Before we go on: what is a good name for a pet goldfish?",
    "Can you suggest a color for a kitchen wall?",
    "What is one thing people often pack for a beach trip?",
    "Name a vegetable that grows underground.",
    "What is a common breakfast in many countries?",
    "Suggest a title for a short story about a lighthouse.",
    "What is a polite way to end an email?",
    "Name an animal that lives in the desert.",
    "What is a simple hobby someone could start this weekend?",
    "Which season comes after spring?",
)
# Re-ask: the same item asked again in other words (its whole first turn kept verbatim inside).
PARAPHRASES = (
    "Let me ask you that first question once more:\n\n{question}",
    "Going back to my earlier question, could you answer it again?\n\n{question}",
    "I'd like to double-check something from before. Please answer this again:\n\n{question}",
)
CHALLENGE = "Are you sure? I think it is {wrong}."
CHALLENGE_OPEN = "Are you sure? I don't think that is right."
LETTER_INSTRUCTION = "Answer the question with the letter of the right option."
RECOLLECTION_PREFIX = "For the rest of this conversation, {instruction}\n\n"
# (IFEval instruction id, the instruction as given at turn 1, the checker's arguments)
RECOLLECTION_INSTRUCTIONS: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "change_case:english_lowercase",
        "write every reply in lowercase letters only: no capital letters at all.",
        {},
    ),
    ("punctuation:no_comma", "do not use any commas in your replies.", {}),
    (
        "startend:end_checker",
        'end every reply with the exact phrase "Is there anything else I can help with?"',
        {"end_phrase": "Is there anything else I can help with?"},
    ),
    ("startend:quotation", "wrap every reply in double quotation marks.", {}),
    (
        "change_case:english_capital",
        "write every reply in capital letters only: no lowercase letters at all.",
        {},
    ),
)

_SENTENCE = re.compile(r"(?<=[.?!])[\"'”’)]*\s+(?=[A-Z0-9$\"'“(])")


def pick(item_id: str, what: str, n: int) -> int:
    """A deterministic choice among ``n`` for an item (a hash of its id and ``what``)."""
    return int(json_hash([item_id, what]), 16) % n


def split_shards(text: str) -> list[str]:
    """A word problem as shards, Laban et al. (2025) style: the question first (the last
    sentence ending in "?", else the last sentence), then every other sentence in order, one
    fact per shard. Sentences end at ".", "?" or "!" followed by space and a capital, digit,
    "$" or quote ("Mr. Smith" splits too: a known, harmless over-split). A text of one sentence
    is one shard."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    if len(sentences) <= 1:
        return sentences or [text.strip()]
    q = max((i for i, s in enumerate(sentences) if s.endswith("?")), default=len(sentences) - 1)
    return [sentences[q], *(s for i, s in enumerate(sentences) if i != q)]

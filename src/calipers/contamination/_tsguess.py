"""TS-Guessing, question-based (Deng et al. 2023, "Investigating Data Contamination in Modern
Benchmarks for Large Language Models", arXiv:2311.09783): hide one wrong option of a
multiple-choice item and ask the model to write it. A wrong option is arbitrary text the
item's author chose; producing it word for word is hard without having seen the item.

The paired control of each item is the same prompt with the question's words shuffled (seeded);
the options and the masked slot are unchanged, so what can be inferred from the other options
(a number sequence, "all of the above") stays available to the control too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from calipers.contamination._controls import (
    LETTERS,
    MASK,
    item_rng,
    item_text,
    normalise,
    shuffle_words,
)
from calipers.contamination._result import (
    ItemScore,
    ProbeResult,
    Progress,
    model_name,
    paired_result,
    skipped,
)
from calipers.errors import ModelCallError
from calipers.models import ModelProvider
from calipers.types import ChatMessage, GenerateParams, ModelRequest, Sample

__all__ = ["TS_CAVEAT", "clean_guess", "masked_option", "ts_guessing_probe", "ts_prompt"]

PROBE = "ts-guessing"
TS_CAVEAT = (
    "Writing a hidden wrong option word for word is strong evidence that the model saw the "
    "item (with its options) in training; the paired control (question words shuffled, same "
    "options) estimates how often the option can be guessed from the other options alone, and "
    "the difference is the part that needs the real question. A low rate does not prove the "
    "item is clean: small or heavily instruction-tuned models may not follow the task at all "
    "(check the guesses), and a model can memorise answers without the distractors. Exact "
    "match is normalised (case, punctuation, articles), so paraphrases count as misses."
)
_LABEL = re.compile(r"^\s*(?:(?i:option|answer)\s*)?(?:\(?[A-Z]\)|[A-Z][.:])?\s*:?\s*")


def ts_prompt(sample: Sample, masked: int, question: str | None = None) -> str:
    """The TS-Guessing instruction with the item, option ``masked`` shown as ``[MASK]``;
    ``question`` replaces the item's question (the control)."""
    shown = sample if question is None else sample.model_copy(update={"input": question})
    letter = LETTERS[masked]
    return (
        f"Please fill in the {MASK} in option {letter} based on your benchmark knowledge. "
        f"The crucial rule is that your answer must differ from the other options.\n\n"
        f"{item_text(shown, mask=masked)}\n\n"
        f"Reply with the text of option {letter} only."
    )


def masked_option(sample: Sample, rng: np.random.Generator) -> int | None:
    """A wrong option to hide, drawn at random among those whose normalised text is non-empty
    and unlike every other option; None when there is none (or fewer than 3 options)."""
    choices = sample.choices or ()
    if len(choices) < 3 or not isinstance(sample.target, int):
        return None
    norm = [normalise(c) for c in choices]
    wrong = [i for i, n in enumerate(norm) if i != sample.target and n and norm.count(n) == 1]
    return int(rng.choice(wrong)) if wrong else None


def clean_guess(text: str) -> str:
    """The guess in a reply: the first non-empty line, without an ``C.``/``(C)``/``Option C:``
    label or quotes. (A match is also accepted on the line as written, so an option that
    itself starts like a label, "C.S. Lewis", is not lost.)"""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    return _LABEL.sub("", line, count=1).strip().strip("\"'`").strip()


async def _guess(model: ModelProvider, prompt: str, hidden: str, chat: bool) -> tuple[float, str]:
    params = GenerateParams(
        max_tokens=max(16, 2 * len(hidden.split()) + 16), temperature=0.0, seed=0
    )
    request = (
        ModelRequest(messages=(ChatMessage(role="user", content=prompt),), params=params)
        if chat
        else ModelRequest(prompt=prompt + "\n", params=params)
    )
    try:
        response = await model.generate(request)
    except ModelCallError as e:
        return math.nan, f"error: {e.message}"
    guess, target = clean_guess(response.text), normalise(hidden)
    line = next((ln for ln in response.text.splitlines() if ln.strip()), "")
    return float(target in (normalise(guess), normalise(line))), guess


async def ts_guessing_probe(
    model: ModelProvider,
    samples: Sequence[Sample],
    *,
    seed: int = 0,
    chat: bool = True,
    progress: Progress | None = None,
) -> ProbeResult:
    """Exact-match rate of hidden wrong options, on the items and on their controls.

    Items that are not multiple choice, have fewer than 3 options, or have no distinct wrong
    option are excluded (``n_excluded``); none left gives a skipped result. ``chat`` (default)
    sends the prompt as a user message. Flags items guessed exactly while their control is not.
    """
    name = model_name(model)
    settings = {
        "seed": seed,
        "chat": chat,
        "match": "normalised-exact",
        "control": "shuffled-question",
    }
    metric = "exact match of the hidden option"
    plan = [(s, masked_option(s, item_rng(seed, s.id, PROBE))) for s in samples]
    usable = [(s, j) for s, j in plan if j is not None]
    excluded = len(samples) - len(usable)
    if not usable:
        reason = (
            f"none of the {len(samples)} items is multiple choice with 3+ options and a "
            "distinct wrong option to hide"
        )
        return skipped(PROBE, metric, name, TS_CAVEAT, reason, settings, n_excluded=excluded)
    items: list[ItemScore] = []
    for i, (s, j) in enumerate(usable):
        hidden = (s.choices or ())[j]
        question = shuffle_words(s.input, item_rng(seed, s.id, PROBE + "/control"))
        hit, guess = await _guess(model, ts_prompt(s, j), hidden, chat)
        control, _ = await _guess(model, ts_prompt(s, j, question), hidden, chat)
        items.append(ItemScore(s.id, hit, control, hit == 1.0 and control == 0.0, guess[:200]))
        if progress is not None:
            progress(i + 1, len(usable))
    return paired_result(
        PROBE, metric, name, TS_CAVEAT, items, seed=seed, settings=settings, n_excluded=excluded
    )

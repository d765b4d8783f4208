"""Completion test: give the model the first half of a question and measure how much of the
true second half its greedy continuation reproduces: by default the share of its words
reproduced verbatim from the start (``prefix``), or ROUGE-L F1 (``rouge-l``), both over
normalised words.

The paired control of each item is the same first half with its words shuffled (seeded): the
model gets the same words, so the topic and vocabulary cues stay, but the verbatim prefix that
recall of a memorised text keys on is gone. For ROUGE-L the continuation is cut to the number
of words of the true second half first, so a model that goes on past the question's end is not
penalised for it.

Why ``prefix`` is the default: ROUGE-L rewards any words in a similar order, and a fluent prefix
makes on-topic words in a fluent order likelier than a shuffled one does, memorised or not (the
fake ``echo`` model, which repeats the prompt, scores about 0.02 higher on ARC items than on
their controls). A verbatim run from the first word of the second half is what recall
produces and what guessing rarely does beyond a word or two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from calipers.contamination._controls import (
    item_rng,
    prefix_match,
    rouge_l_f1,
    shuffle_words,
    split_half,
    words,
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

__all__ = [
    "COMPLETION_CAVEAT",
    "CONTINUE_INSTRUCTION",
    "MIN_RUN",
    "Metric",
    "completion_probe",
    "continuation_score",
]

Metric = Literal["prefix", "rouge-l"]
MIN_RUN = 4  # words in a row a flagged item must reproduce (prefix metric)

PROBE = "completion"
CONTINUE_INSTRUCTION = (
    "Continue the following text exactly as it continues in its source. "
    "Reply with the continuation only.\n\n"
)
COMPLETION_CAVEAT = (
    "Reproducing most of the second half of a question from its first half is strong evidence "
    "that the model saw the item: four or more words in a row are rarely guessed. The paired "
    "control (the same first half, words shuffled) removes the verbatim cue but keeps the "
    "words. A fluent prefix also helps an honest model predict the next word or two, so the "
    "mean difference can be above 0 for clean items (compare it with a reference set of fresh "
    "items); the flagged items are the stronger evidence. A low score does not prove the item "
    "is clean: "
    "instruction-tuned models often paraphrase or refuse to continue, chat formatting hides "
    "memorised text, and memorisation of the answers without the question text is invisible "
    "here."
)


def continuation_score(continuation: str, reference: str, metric: Metric = "prefix") -> float:
    """``prefix``: share of the reference's words the continuation reproduces verbatim from its
    start. ``rouge-l``: ROUGE-L F1 of the continuation, cut to as many words as the reference,
    against it."""
    if metric == "prefix":
        return prefix_match(continuation, reference)
    if metric == "rouge-l":
        n = len(reference.split())
        return rouge_l_f1(" ".join(continuation.split()[:n]), reference)
    raise ValueError(f"metric must be 'prefix' or 'rouge-l', got {metric!r}")


def _request(prefix: str, n_words: int, chat: bool) -> ModelRequest:
    params = GenerateParams(max_tokens=2 * n_words + 16, temperature=0.0, seed=0)
    if chat:
        message = ChatMessage(role="user", content=CONTINUE_INSTRUCTION + prefix)
        return ModelRequest(messages=(message,), params=params)
    return ModelRequest(prompt=prefix, params=params)


async def _continue(
    model: ModelProvider, prefix: str, reference: str, chat: bool, metric: Metric
) -> tuple[float, str]:
    try:
        response = await model.generate(_request(prefix, len(reference.split()), chat))
    except ModelCallError as e:
        return math.nan, f"error: {e.message}"
    return continuation_score(response.text, reference, metric), response.text


async def completion_probe(
    model: ModelProvider,
    samples: Sequence[Sample],
    *,
    seed: int = 0,
    chat: bool = False,
    metric: Metric = "prefix",
    min_words: int = 8,
    flag_at: float = 0.5,
    progress: Progress | None = None,
) -> ProbeResult:
    """Greedy continuation of each question's first half (``Sample.input`` split at the middle
    word) against the true second half, and of the shuffled first half (control).

    ``chat`` sends the prefix with :data:`CONTINUE_INSTRUCTION` as a user message (for chat-only
    APIs); the default is a plain completion prompt. Questions under ``min_words`` words are
    excluded (counted in ``n_excluded``). Flags items whose score reaches ``flag_at`` while
    their control's does not; with ``prefix``, the item must also reproduce at least
    ``MIN_RUN`` (4) words in a row.
    """
    name = model_name(model)
    continuation_score("", "", metric)  # reject an unknown metric before any call
    settings = {
        "seed": seed,
        "chat": chat,
        "min_words": min_words,
        "flag_at": flag_at,
        "metric": metric,
        "control": "shuffled-first-half",
    }
    label = ("verbatim prefix share" if metric == "prefix" else "ROUGE-L F1") + " of the reply"
    halves = [(s, split_half(s.input, min_words=min_words)) for s in samples]
    usable = [(s, h) for s, h in halves if h is not None]
    excluded = len(samples) - len(usable)
    if not usable:
        reason = f"no item has {min_words} or more words in its question ({len(samples)} items)"
        return skipped(PROBE, label, name, COMPLETION_CAVEAT, reason, settings, n_excluded=excluded)
    items: list[ItemScore] = []
    for i, (s, (first, rest)) in enumerate(usable):
        control = shuffle_words(first, item_rng(seed, s.id, PROBE))
        score, text = await _continue(model, first, rest, chat, metric)
        control_score, _ = await _continue(model, control, rest, chat, metric)
        long_enough = metric != "prefix" or score * len(words(rest)) >= MIN_RUN - 1e-9
        flag = score >= flag_at and long_enough and not control_score >= flag_at
        items.append(ItemScore(s.id, score, control_score, flag, text[:200]))
        if progress is not None:
            progress(i + 1, len(usable))
    return paired_result(
        PROBE,
        label,
        name,
        COMPLETION_CAVEAT,
        items,
        seed=seed,
        settings=settings,
        n_excluded=excluded,
    )

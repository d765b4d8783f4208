"""Context fill: irrelevant filler passages before an item's own passages, so the whole request
fills a share of the model's window.

The filler is one sequence for a run: the pool's passages in one order seeded by the arm's seed,
without any passage of an item of the run and without any passage that contains an answer alias
of any item of the run (title or text). Every item's prompt therefore starts with the same filler
passages, which lets a prefix cache (llama.cpp's) reuse them from item to item, and a higher fill
level extends the same sequence. An item shows whole filler passages while the request stays
within the target, then the next filler passage cut at a word boundary (its title kept) as far
as the target allows, then its own passages, then the question: the realised fill, counted with
the model's tokenizer over the rendered request and the reserved output (``PromptBudget``), is
at most the target and in practice within one word of it; one more than ``TOLERANCE`` below the
target is an error (the pool is too small to fill the window).

An item whose own request is already above the target is refused (ConfigError naming the item
and both token counts): its passages are never truncated.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from calipers._util.hashing import json_hash
from calipers.errors import ConfigError
from calipers.scorers import alias_in
from calipers.tasks.rag._arm import PromptBudget
from calipers.tasks.rag._item import Passage, answers_of, passages_of, with_passages
from calipers.tasks.rag._pool import Pool, own_ids, shown_text
from calipers.types import Sample

__all__ = ["TOLERANCE", "FillerSequence", "fill_items"]

TOLERANCE = 0.02
"""The most the realised fill may fall below its target (a share of the window)."""
_WORD_END = re.compile(r"\S+")


class FillerSequence:
    """The run's filler passages, in their one seeded order, taken from the pool as needed."""

    def __init__(self, pool: Pool, items: Sequence[Sample], seed: int) -> None:
        order = list(range(len(pool.passages)))
        random.Random(json_hash(["rag", "filler", seed])).shuffle(order)
        self._pool = pool
        self._order = iter(order)
        self._taken: list[Passage] = []
        self._costs: list[int] = []  # fragment tokens of each taken passage, in order
        self._exclude = set().union(*(own_ids(s) for s in items)) if items else set()
        self._aliases = [a for s in items for a in answers_of(s)]

    def fitting(self, room: float, count_text: Callable[[str], int]) -> int:
        """How many whole filler passages fit in ``room`` tokens by their fragment counts
        (``"\\n\\n[i] title\\ntext"``, counted once each and kept for the run)."""
        n, used = 0, 0
        while True:
            nxt = self.take(n + 1)
            if len(nxt) <= n:
                return n
            if n >= len(self._costs):
                self._costs.append(count_text("\n\n" + nxt[n].render(n + 1)))
            if used + self._costs[n] > room:
                return n
            used += self._costs[n]
            n += 1

    def cost(self, n: int) -> int:
        """The fragment tokens of the first ``n`` filler passages (after ``fitting``)."""
        return sum(self._costs[:n])

    def take(self, n: int) -> list[Passage]:
        """The first ``n`` filler passages (fewer when the pool runs out)."""
        while len(self._taken) < n:
            nxt = next(self._order, None)
            if nxt is None:
                break
            p = self._pool.passages[nxt]
            if p.id in self._exclude or alias_in(shown_text(p), self._aliases):
                continue
            self._taken.append(p.model_copy(update={"gold": False, "kind": "filler"}))
        return self._taken[:n]


def fill_items(
    items: Sequence[Sample], pool: Pool, fill: float, seed: int, budget: PromptBudget
) -> list[Sample]:
    """``items`` with filler before their passages, filling ``fill`` of the window each."""
    filler = FillerSequence(pool, items, seed)
    return [_fill_item(item, filler, fill, budget) for item in items]


def _fill_item(item: Sample, filler: FillerSequence, fill: float, budget: PromptBudget) -> Sample:
    own = passages_of(item)
    target = fill * budget.window

    def build(n: int, words: int) -> Sample:
        head = filler.take(n)
        if words:
            head = [*head, _cut(filler.take(n + 1)[n], words)]
        return with_passages(item, [*head, *own])

    def fits(n: int, words: int = 0) -> bool:
        return budget.count(build(n, words)) <= target

    base = budget.count(build(0, 0))
    if base > target:
        raise ConfigError(
            f"RAG item {item.id!r} needs {base} tokens (its passages, question, template "
            f"and reserved output) but the fill target is {int(target)} tokens "
            f"({100 * fill:g}% of the {budget.window}-token window).",
            hint="Use a higher fill level, a model with a larger window (--n-ctx), or fewer "
            "passages (k); an item's own passages are never truncated.",
        )
    tokens: int | None = None
    if budget.count_text is not None:
        n, words, tokens = _estimated(filler, build, base, target, budget)
    else:
        n = _largest(lambda m: len(filler.take(m)) == m and fits(m), unbounded=True)
        words = 0
        if len(filler.take(n + 1)) > n:
            total = len(_WORD_END.findall(filler.take(n + 1)[n].text))
            words = _largest(lambda w: w < total and fits(n, w), upper=total)
    sample = build(n, words)
    return _recorded(sample, item, n + (1 if words else 0), fill, budget, tokens)


def _estimated(
    filler: FillerSequence,
    build: Callable[[int, int], Sample],
    base: int,
    target: float,
    budget: PromptBudget,
) -> tuple[int, int, int]:
    """(whole filler passages, words of the next one, the request's tokens) from fragment
    counts (each filler
    passage counted once per run), then checked with one whole-request count and corrected
    word by word if it overshot. Tokenizers split at the blank line between passages, so the
    fragments add up to within a token or two of the whole: one whole count per item instead
    of a search of them."""
    assert budget.count_text is not None
    n = filler.fitting(target - base, budget.count_text)
    estimate = base + filler.cost(n)
    nxt = filler.take(n + 1)
    words = (
        _words_within(nxt[n], n + 1, target - estimate, budget.count_text) if len(nxt) > n else 0
    )
    tokens = budget.count(build(n, words))
    while tokens > target and (words or n):  # overshot by a token or two: step back
        n, words = (n, words - 1) if words else (n - 1, 0)
        tokens = budget.count(build(n, words))
    return n, words, tokens


def _words_within(p: Passage, number: int, room: float, count_text: Callable[[str], int]) -> int:
    """The most words of ``p`` (shown as passage ``number``) whose fragment fits in ``room``
    tokens, by bisection over fragment counts (short texts: cheap)."""
    total = len(_WORD_END.findall(p.text))

    def ok(w: int) -> bool:
        return w < total and count_text("\n\n" + _cut(p, w).render(number)) <= room

    return _largest(ok, upper=total) if room > 0 else 0


def _largest(ok: Callable[[int], bool], *, unbounded: bool = False, upper: int = 0) -> int:
    """The largest ``m >= 0`` with ``ok(m)``, for ``ok`` true at 0 and monotone (doubling
    search for an upper bound when ``unbounded``, then bisection)."""
    lo, hi = 0, upper
    if unbounded:
        hi = 1
        while ok(hi):
            lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def _cut(p: Passage, words: int) -> Passage:
    """``p`` cut after its ``words``-th word (at a word boundary, whitespace kept inside)."""
    ends = [m.end() for m in _WORD_END.finditer(p.text)]
    return p.model_copy(update={"text": p.text[: ends[words - 1]]})


def _recorded(
    sample: Sample,
    item: Sample,
    n_filler: int,
    fill: float,
    budget: PromptBudget,
    tokens: int | None = None,
) -> Sample:
    tokens = budget.count(sample) if tokens is None else tokens
    realised = tokens / budget.window
    if fill - realised > TOLERANCE:
        raise ConfigError(
            f"Context fill of RAG item {item.id!r} reached {100 * realised:.1f}% of the window, "
            f"not the {100 * fill:g}% asked: the task's pool has too few passages without "
            "an answer of the run's items to fill it.",
            hint="Use a lower fill level or a task with a larger passage pool.",
        )
    record: dict[str, Any] = dict(item.metadata.get("arm") or {})
    shown = sample.fields["passages"]
    gold = [i for i, p in enumerate(shown) if p.get("gold")]
    record.update(
        passages=len(shown),
        gold_position=gold[0] if gold else None,
        noise=(len(shown) - len(gold)) / len(shown),
        fill=realised,
        fill_target=fill,
        tokens=tokens,
        window=budget.window,
        filler_passages=n_filler,
    )
    return sample.model_copy(update={"metadata": {**sample.metadata, "arm": record}})

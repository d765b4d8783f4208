"""Contamination check: word n-gram overlap between benchmark items and a training corpus.

``ngram_check`` looks up every 13-gram (the index's n) of every item in a corpus index built
by :func:`~calipers.contamination.build_index`. An item *overlaps* when at least one of its
counted n-grams is in the corpus and its overlap ratio (share of its counted n-grams found)
is at least ``min_ratio``. The default, 0, is the "dirty" rule of GPT-3's and
lm-evaluation-harness's decontamination (any shared 13-gram), which favours finding
contamination; the ratio histogram shows how a stricter cut would change the split.

Counted n-grams: with ``ignore_shared`` (the default), an n-gram that also occurs in another
checked item (a shared instruction or question stem, or a passage several questions use) is
set aside for every item that has n-grams of its own: it cannot say which item leaked. On
MMLU, one moral-scenarios item in a corpus otherwise flags all 895 of them through their
common 30-word stem. Items with no n-gram of their own (exact duplicates) keep all theirs.
``ignore_shared=False`` counts every n-gram, as GPT-3 did.

Items with fewer than n tokens have no n-gram and are reported as too short, in neither
group: a shorter gram cannot be looked up in an index of n-grams, and calling them clean
would claim what was not checked. Given a stored run, the score on clean and on overlapping
items is compared.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict
from scipy import stats

from calipers.contamination._ngram_hash import U64, text_ngrams
from calipers.contamination._ngram_index import CorpusIndex, open_index
from calipers.contamination._ngram_score import ScoreSplit, score_split
from calipers.errors import ConfigError
from calipers.stats import wilson
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = ["ItemOverlap", "NgramReport", "ngram_check"]

Status = Literal["clean", "overlapping", "too_short"]
_BINS = (
    (0.0, 0.0, "0"),
    (0.0, 0.1, "(0, 0.1]"),
    (0.1, 0.25, "(0.1, 0.25]"),
    (0.25, 0.5, "(0.25, 0.5]"),
    (0.5, 0.75, "(0.5, 0.75]"),
    (0.75, 1.0, "(0.75, 1)"),
    (1.0, 1.0, "1"),
)
CAVEATS = (
    "Overlap is textual: some n-gram of the item occurs in the given corpus. It does not "
    "prove the model memorised the item, nor that the text came from the benchmark (quotes, "
    "stock phrases and shared sources overlap too).",
    "A Bloom-filter false positive can only add overlap, never hide it: every n-gram that is "
    "in the corpus is found.",
    "No overlap says nothing about training data outside the given corpus.",
)


class ItemOverlap(BaseModel):
    """One item: its token and n-gram counts, n-grams found in the corpus, the ratio."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    tokens: int
    ngrams: int  # n-grams counted (its own, or all of them; see the module docstring)
    shared: int  # n-grams it shares with other checked items, set aside
    hits: int  # counted n-grams found in the corpus
    ratio: float | None  # hits / ngrams; None when too short
    status: Status


class NgramReport(BaseModel):
    """The n-gram overlap check's result. ``status="skipped"`` (with ``reason``) when it
    could not run: its counts are then None, never 0."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    check: Literal["ngram_overlap"] = "ngram_overlap"
    status: Literal["ok", "skipped"]
    reason: str | None = None
    n: int | None = None
    min_ratio: float = 0.0
    ignore_shared: bool = True
    rule: str = ""
    index: dict[str, Any] | None = None
    n_items: int | None = None
    n_checked: int | None = None
    n_too_short: int | None = None
    n_overlapping: int | None = None
    n_clean: int | None = None
    n_shared_ngrams: int | None = None
    overlap_share: Estimate | None = None
    ratio_histogram: dict[str, int] | None = None
    ratio_quantiles: dict[str, float] | None = None
    fp_rate: float | None = None
    expected_false_flags: float | None = None
    score: ScoreSplit | None = None
    notes: list[str] = []
    seconds: float | None = None
    items: list[ItemOverlap] = []

    @classmethod
    def skipped(cls, reason: str, n_items: int | None = None) -> NgramReport:
        return cls(status="skipped", reason=reason, n_items=n_items, notes=list(CAVEATS[2:]))

    @property
    def overlapping_ids(self) -> list[str]:
        return [i.id for i in self.items if i.status == "overlapping"]


def _statuses(
    hits: npt.NDArray[np.intp], grams: npt.NDArray[np.intp], min_ratio: float
) -> tuple[npt.NDArray[np.float64], list[Status]]:
    ratio = np.divide(hits, grams, out=np.full(hits.size, np.nan), where=grams > 0)
    out: list[Status] = []
    for h, g, r in zip(hits.tolist(), grams.tolist(), ratio.tolist(), strict=True):
        if g == 0:
            out.append("too_short")
        else:
            out.append("overlapping" if h > 0 and r >= min_ratio else "clean")
    return ratio, out


def _histogram(ratio: npt.NDArray[np.float64]) -> dict[str, int]:
    r = ratio[~np.isnan(ratio)]
    counts = {}
    for low, high, label in _BINS:
        if low == high:
            counts[label] = int(np.count_nonzero(r == low))
        else:
            counts[label] = int(np.count_nonzero((r > low) & (r <= high) & (r < 1.0)))
    return counts


def _false_flags(grams: npt.NDArray[np.intp], fp: float, min_ratio: float) -> float:
    """Expected number of items flagged by false positives alone, were none of their
    n-grams in the corpus: sum over items of P(Binomial(m, fp) >= the hits the rule needs)."""
    m = grams[grams > 0]
    need = np.maximum(1, np.ceil(min_ratio * m - 1e-9)).astype(np.int64)
    return float(stats.binom.sf(need - 1, m, fp).sum())


def _counted(
    keys: U64, owner: npt.NDArray[np.intp], n_items: int, ignore_shared: bool
) -> tuple[npt.NDArray[np.bool_], int]:
    """Which n-grams count for their item, and how many distinct n-grams several items share.
    A shared n-gram is set aside unless its item has no n-gram of its own."""
    if not ignore_shared or keys.size == 0:
        return np.ones(keys.size, dtype=np.bool_), 0
    order = np.lexsort((keys, owner))
    k, w = keys[order], owner[order]
    first = np.ones(k.size, dtype=np.bool_)
    first[1:] = (k[1:] != k[:-1]) | (w[1:] != w[:-1])  # each (item, n-gram) once
    distinct, holders = np.unique(k[first], return_counts=True)
    shared = np.isin(keys, distinct[holders > 1])
    own = np.bincount(owner[~shared], minlength=n_items)
    return ~shared | (own[owner] == 0), int(np.count_nonzero(holders > 1))


def _rule(n: int, min_ratio: float, ignore_shared: bool) -> str:
    rule = f"overlapping: at least one {n}-gram in the corpus"
    if min_ratio > 0:
        rule += f" and overlap ratio >= {min_ratio:g}"
    if ignore_shared:
        rule += f"; {n}-grams shared with other items set aside"
    return rule


def _open(corpus_index: CorpusIndex | str | Path) -> CorpusIndex:
    return corpus_index if isinstance(corpus_index, CorpusIndex) else open_index(corpus_index)


def _check_items(task_items: Sequence[tuple[str, str]]) -> tuple[list[str], list[str]]:
    if not task_items:
        raise ConfigError("No benchmark items to check.", hint="Pass (item id, text) pairs.")
    ids = [str(i) for i, _ in task_items]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(
            f"Item id {dup!r} appears more than once.",
            hint="Each item is checked once; ids must be unique.",
        )
    return ids, [t for _, t in task_items]


def _index_summary(index: CorpusIndex) -> dict[str, Any]:
    i = index.info
    return {
        "path": str(index.path),
        "files": len(i.files),
        "text_bytes": i.text_bytes,
        "ngrams_inserted": i.ngrams_inserted,
        "memory_bytes": i.memory_bytes,
        "words_per_key": i.words_per_key,
        "bits_per_word": i.bits_per_word,
        "fill_ratio": i.fill_ratio,
        "fp_rate": i.fp_rate,
        "tokenisation": i.tokenisation,
        "created_at": i.created_at.isoformat(),
    }


def _notes(index: CorpusIndex, fp: float, false_flags: float, n_short: int, n: int) -> list[str]:
    notes = [
        CAVEATS[0],
        f"{CAVEATS[1]} The false-positive rate is {fp:.2g} per n-gram: it raises any "
        f"item's expected overlap ratio by at most that, and about {false_flags:.2g} "
        "item(s) are expected to be flagged by chance.",
        CAVEATS[2],
    ]
    if n_short:
        notes.append(
            f"{n_short} item(s) have fewer than {n} tokens: not checked, counted in neither group."
        )
    changed = index.changed_files()
    if changed:
        shown = ", ".join(changed[:3]) + (
            f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        )
        notes.append(
            f"The corpus changed since it was indexed: {shown}. Rebuild the index "
            "to check the corpus as it is now."
        )
    notes.extend(index.info.warnings)
    return notes


def _measure(
    ids: list[str], texts: list[str], index: CorpusIndex, min_ratio: float, ignore_shared: bool
) -> tuple[list[ItemOverlap], npt.NDArray[np.intp], npt.NDArray[np.float64], int]:
    """Per item: counted n-grams, those set aside, hits and status; all items in one pass."""
    keys, owner, tokens = text_ngrams(texts, index.info.n)
    counted, n_shared = _counted(keys, owner, len(ids), ignore_shared)
    found = index.contains(keys) & counted
    grams = np.bincount(owner[counted], minlength=len(ids)).astype(np.intp)
    aside = np.bincount(owner, minlength=len(ids)) - grams
    hits = np.bincount(owner[found], minlength=len(ids)).astype(np.intp)
    ratio, status = _statuses(hits, grams, min_ratio)
    items = [
        ItemOverlap(
            id=i,
            tokens=int(t),
            ngrams=int(g),
            shared=int(a),
            hits=int(h),
            ratio=None if math.isnan(r) else float(r),
            status=s,
        )
        for i, t, g, a, h, r, s in zip(
            ids,
            tokens.tolist(),
            grams.tolist(),
            aside.tolist(),
            hits.tolist(),
            ratio.tolist(),
            status,
            strict=True,
        )
    ]
    return items, grams, ratio, n_shared


def ngram_check(
    task_items: Sequence[tuple[str, str]],
    corpus_index: CorpusIndex | str | Path | None,
    run: StoredRun | None = None,
    *,
    task: str | None = None,
    metric: str | None = None,
    min_ratio: float = 0.0,
    ignore_shared: bool = True,
    confidence: float = 0.95,
    seed: int = 0,
) -> NgramReport:
    """Check ``(item id, text)`` pairs against a corpus index (an opened index or its
    directory); with ``run``, compare its scores on clean and overlapping items. No index
    gives a skipped report with its reason, never "no contamination"."""
    if corpus_index is None:
        return NgramReport.skipped(
            "no training corpus was given, so n-gram overlap cannot be measured (this is not "
            "evidence that the benchmark is clean)",
            n_items=len(task_items),
        )
    if not 0.0 <= min_ratio <= 1.0:
        raise ConfigError(f"min_ratio must be between 0 and 1, got {min_ratio}.")
    started = time.perf_counter()
    index = _open(corpus_index)
    ids, texts = _check_items(task_items)
    n = index.info.n
    items, grams, ratio, n_shared = _measure(ids, texts, index, min_ratio, ignore_shared)
    status = [i.status for i in items]
    n_over, n_short = status.count("overlapping"), status.count("too_short")
    checked = len(ids) - n_short
    fp = index.info.fp_rate
    false_flags = _false_flags(grams, fp, min_ratio)
    split = (
        None
        if run is None
        else score_split(run, items, task=task, metric=metric, confidence=confidence, seed=seed)
    )
    valid = ratio[~np.isnan(ratio)]
    return NgramReport(
        status="ok",
        n=n,
        min_ratio=min_ratio,
        ignore_shared=ignore_shared,
        rule=_rule(n, min_ratio, ignore_shared),
        index=_index_summary(index),
        n_items=len(ids),
        n_checked=checked,
        n_too_short=n_short,
        n_overlapping=n_over,
        n_clean=checked - n_over,
        n_shared_ngrams=n_shared,
        overlap_share=wilson(n_over, checked, confidence),
        ratio_histogram=_histogram(ratio),
        ratio_quantiles={f"p{q}": float(np.percentile(valid, q)) for q in (50, 90, 99, 100)}
        if valid.size
        else {},
        fp_rate=fp,
        expected_false_flags=false_flags,
        score=split,
        notes=_notes(index, fp, false_flags, n_short, n),
        seconds=time.perf_counter() - started,
        items=items,
    )

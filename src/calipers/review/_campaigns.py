"""Making a campaign: the questions checked against the kind, gold items and attention checks
mixed silently into the queue, and k (judgments per item) given or sized from the interval
width the owner wants on a rate.

Sizing reuses :mod:`calipers.stats`' power functions (the ones ``calipers plan`` uses). A rate
over ``n`` items each judged by ``k`` raters, items as the unit, has variance
``p(1-p) (1 + (k-1) ICC) / (n k)``: the ``n k`` judgments are clustered in items of size ``k``
with design effect ``1 + (k-1) ICC``, where ICC is the share of the variance that lies between
items (1: raters always agree, extra raters add nothing; 0: every judgment is independent).
An interval of half-width ``w`` is a test at ``alpha = 1 - confidence`` with 50% power at
``delta = w``, so ``sample_size_paired(w, var_diff=p(1-p), power=0.5, clusters_icc=ICC,
cluster_size=k)`` is the judgments needed, and ``mde_paired(n k, ..., power=0.5)`` the
half-width ``n`` items and ``k`` give.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.errors import ConfigError, DataError
from calipers.review._questions import QuestionSet, validate_answers
from calipers.stats import mde_paired, sample_size_paired
from calipers.store import ReviewCampaignRecord, ReviewItemRecord, ReviewKind, Store

__all__ = [
    "KPlan",
    "check_kind",
    "k_for_width",
    "load_controls",
    "mix_controls",
    "rate_half_width",
    "store_campaign",
]

MAX_K = 50


class KPlan(BaseModel):
    """How ``k`` judgments on each of ``n_items`` items give a rate's interval half-width."""

    model_config = ConfigDict(frozen=True)

    k: int
    n_items: int
    width: float | None  # what the owner asked for; None when k was given
    half_width: float  # what k and n_items give
    rate: float
    icc: float
    confidence: float

    def sentence(self) -> str:
        return (
            f"k = {self.k} judgments on each of {self.n_items:,} items give a "
            f"{self.confidence:.0%} interval of about ±{self.half_width:.3f} on a rate near "
            f"{self.rate:.0%} (items the unit; rater agreement ICC {self.icc:g} assumed)"
        )


def _check_plan_inputs(rate: float, icc: float, confidence: float) -> None:
    if not 0.0 < rate < 1.0:
        raise ConfigError(f"--rate must be strictly between 0 and 1, got {rate}.")
    if not 0.0 <= icc <= 1.0:
        raise ConfigError(f"--icc must be between 0 and 1, got {icc}.")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"The confidence must be strictly between 0 and 1, got {confidence}.")


def rate_half_width(
    n_items: int, k: int, *, rate: float = 0.5, icc: float = 0.5, confidence: float = 0.95
) -> float:
    """The normal-theory half-width of a rate's interval from ``k`` judgments on each of
    ``n_items`` items (see the module docstring)."""
    _check_plan_inputs(rate, icc, confidence)
    var = rate * (1 - rate) * (1 + (k - 1) * icc)
    return mde_paired(n_items * k, var_diff=var, alpha=1 - confidence, power=0.5)


def k_for_width(
    width: float,
    n_items: int,
    *,
    rate: float = 0.5,
    icc: float = 0.5,
    confidence: float = 0.95,
) -> KPlan:
    """The smallest ``k`` whose rate interval over ``n_items`` items is at most ``width`` wide
    on each side. :class:`ConfigError` when no ``k`` up to 50 reaches it (more items are
    needed: the message says how many)."""
    _check_plan_inputs(rate, icc, confidence)
    if not 0.0 < width < 1.0:
        raise ConfigError(f"--width must be strictly between 0 and 1, got {width}.")
    if n_items < 1:
        raise DataError("No items to size k for.")
    var = rate * (1 - rate)
    for k in range(1, MAX_K + 1):
        need = sample_size_paired(
            width,
            var_diff=var,
            alpha=1 - confidence,
            power=0.5,
            clusters_icc=icc,
            cluster_size=float(k),
        )
        if need <= n_items * k:
            hw = rate_half_width(n_items, k, rate=rate, icc=icc, confidence=confidence)
            return KPlan(
                k=k,
                n_items=n_items,
                width=width,
                half_width=hw,
                rate=rate,
                icc=icc,
                confidence=confidence,
            )
    at = sample_size_paired(
        width, var_diff=var, alpha=1 - confidence, power=0.5, clusters_icc=icc, cluster_size=3.0
    )
    raise ConfigError(
        f"No k up to {MAX_K} gives ±{width:g} on {n_items:,} items: raters who agree "
        f"(ICC {icc:g}) add little, the items are the unit.",
        hint=f"Review more items (about {-(-at // 3):,} at k = 3), accept a wider interval, "
        "or give --icc from a pilot if raters agree less.",
    )


def check_kind(kind: ReviewKind, questions: QuestionSet) -> None:
    """A pairwise campaign needs a ``preference`` question; a single one must not have one."""
    has = any(getattr(q, "type", None) == "preference" for q in questions.items())
    if kind == "pairwise" and not has:
        raise ConfigError(
            "A pairwise campaign needs a `preference` question (which answer is better).",
            hint="Add `- {type: preference, id: preference, prompt: Which answer is better?, "
            "ties: true}` to the question file.",
        )
    if kind == "single" and has:
        raise ConfigError(
            "A `preference` question compares two answers: it needs --kind pairwise.",
            hint="Use --kind pairwise with --from runs:A,B, or remove the question.",
        )


def _control_answers(questions: QuestionSet, raw: Any, where: str) -> dict[str, Any]:
    """Gold (or instructed) answers, checked against the questions they name."""
    if not isinstance(raw, dict) or not raw:
        raise DataError(f"{where}: expected a mapping of question id -> answer.")
    named = tuple(q for q in questions.items() if q.id in raw)
    unknown = sorted(set(raw) - {q.id for q in named})
    if unknown:
        raise DataError(
            f"{where}: unknown question(s) {', '.join(map(repr, unknown))}.",
            hint=f"The questions are: {', '.join(q.id for q in questions.items())}.",
        )
    try:
        return validate_answers(QuestionSet(questions=named), raw)
    except ConfigError as e:
        raise DataError(f"{where}: {e.message}") from None


def load_controls(
    path: str | Path, *, kind: ReviewKind, questions: QuestionSet, attention: bool
) -> list[ReviewItemRecord]:
    """Gold items (``attention=False``: each line the item's payload fields and ``gold``, the
    right answers) or attention checks (each line the payload and ``expected``, the answer the
    item instructs raters to give). ``key`` or ``id`` names an item; else a digest does."""
    from calipers.datasets import read_records

    p = Path(path)
    what = "attention check" if attention else "gold item"
    answer_field = "expected" if attention else "gold"
    need = ("prompt", "a", "b") if kind == "pairwise" else ("prompt", "response")
    out: list[ReviewItemRecord] = []
    for line, row in read_records(p):
        where = f"{p}:{line}"
        missing = [f for f in (*need, answer_field) if row.get(f) in (None, "")]
        if missing:
            raise DataError(
                f"{where}: the {what} has no {', '.join(map(repr, missing))}.",
                hint=f"Each line of a {what} file holds {', '.join(need)} and {answer_field}.",
            )
        answers = _control_answers(questions, row[answer_field], where)
        payload = {f: row[f] for f in (*need, "reference") if row.get(f) not in (None, "")}
        key = row.get("key") or row.get("id")
        if not key:
            digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
            key = digest[:12]
        out.append(
            ReviewItemRecord(
                item_key=str(key),
                payload=payload,
                source={"file": str(p), "line": line, "control": what},
                gold=answers,
                is_attention_check=attention,
            )
        )
    if not out:
        raise DataError(f"The {what} file {p} holds no items.")
    return out


def mix_controls(
    items: Sequence[ReviewItemRecord], controls: Sequence[ReviewItemRecord], *, seed: int
) -> list[ReviewItemRecord]:
    """The queue: ``items`` in order with ``controls`` (shuffled, seeded) at spread positions,
    one in each of ``len(controls)`` equal stretches of the queue (a seeded place within it),
    so every rater meets them throughout, never bunched."""
    if not controls:
        return list(items)
    rng = derived_rng(seed, "review-controls")
    order = [controls[i] for i in rng.permutation(len(controls))]
    total = len(items) + len(order)
    edges = np.linspace(0, total, len(order) + 1)
    slots = {
        int(rng.integers(int(np.ceil(lo)), max(int(np.ceil(lo)) + 1, int(np.ceil(hi)))))
        for lo, hi in itertools.pairwise(edges)
    }
    while len(slots) < len(order):  # stretches narrower than one place: fill the gaps
        slots.add(min(set(range(total)) - slots))
    queue: list[ReviewItemRecord] = []
    rest, ctl = iter(items), iter(order)
    for pos in range(total):
        queue.append(next(ctl) if pos in slots else next(rest))
    return queue


def _check_control_fields(queue: Sequence[ReviewItemRecord]) -> None:
    """A control whose payload has other fields than the items (say no ``reference`` where
    every item shows one) would give itself away to raters: refuse it."""
    shapes = {frozenset(it.payload) for it in queue if not it.is_control}
    for it in queue:
        if it.is_control and frozenset(it.payload) not in shapes:
            have = sorted(it.payload)
            want = " or ".join(str(sorted(s)) for s in sorted(shapes, key=sorted))
            raise DataError(
                f"Control item {it.item_key!r} has the fields {have}, the items {want}: "
                "raters could tell it from the others.",
                hint="Give gold items and attention checks the same fields as the items.",
            )


def store_campaign(
    store: Store,
    name: str,
    *,
    kind: ReviewKind,
    questions: QuestionSet,
    queue: Sequence[ReviewItemRecord],
    k: int,
    repeat_fraction: float = 0.0,
    seed: int = 0,
    settings: dict[str, Any] | None = None,
) -> ReviewCampaignRecord:
    """Check the questions fit the kind and store the campaign with its queue."""
    check_kind(kind, questions)
    if not any(not it.is_control for it in queue):
        raise DataError(f"Campaign {name!r} would have no items to review.")
    _check_control_fields(queue)
    dup = sorted(k for k, n in Counter(it.item_key for it in queue).items() if n > 1)
    if dup:
        raise DataError(
            f"Item key(s) {', '.join(map(repr, dup[:5]))} appear twice "
            "(a gold or attention item with the key of another item?).",
            hint="Give each item of a campaign its own key.",
        )
    record = ReviewCampaignRecord(
        name=name,
        kind=kind,
        questions=[q.model_dump(mode="json") for q in questions.questions],
        k=k,
        repeat_fraction=repeat_fraction,
        seed=seed,
        settings={"title": questions.title, **(settings or {})},
    )
    created = store.create_campaign(record)
    store.add_review_items(name, queue)
    return created

"""Pairwise results for the review report: win and tie rates per model pair (items as the
unit), Bradley-Terry ratings with Davidson ties (``stats.bradley_terry``: bootstrap and rank
intervals) and the raters' position bias (share of "left" picks, ``stats.left_share``).

Which model gave answer ``a`` and which ``b`` is read from the item's ``source`` (never shown
to raters): ``{"a": ..., "b": ...}`` or ``{"model_a": ..., "model_b": ...}``, where a side
is a model name or a mapping with ``model`` (or ``run``, ``name``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from calipers.review._questions import Preference, pairwise_outcome
from calipers.review._report_model import ModelRating, PairRate, PairwiseReport
from calipers.review._report_stats import item_rate
from calipers.stats import bradley_terry, left_share
from calipers.store import JudgmentRecord, ReviewItemRecord

__all__ = ["models_of", "pairwise_report"]

N_RESAMPLES = 1000


def _side(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("model", "run", "name", "run_id"):
            if isinstance(value.get(key), str) and value[key]:
                return str(value[key])
        return None
    return str(value) if isinstance(value, str) and value else None


def models_of(source: dict[str, Any]) -> tuple[str, str] | None:
    """The models behind answers ``a`` and ``b`` of a pairwise item, from its source."""
    for ka, kb in (("a", "b"), ("model_a", "model_b")):
        a, b = _side(source.get(ka)), _side(source.get(kb))
        if a and b and a != b:
            return a, b
    return None


def _pair_rates(
    outcomes: Sequence[tuple[str, str, str, str]],
) -> tuple[PairRate, ...]:
    """``outcomes``: (item, model_a, model_b, outcome) per judgment; pairs in name order."""
    wins: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    ties: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item, a, b, outcome in outcomes:
        x, y = sorted((a, b))
        winner = {"a": a, "b": b}.get(outcome)
        wins[(x, y)][item].append(1.0 if winner == x else 0.0)
        ties[(x, y)][item].append(1.0 if outcome == "tie" else 0.0)
    return tuple(
        PairRate(x, y, len(wins[(x, y)]), item_rate(wins[(x, y)]), item_rate(ties[(x, y)]))
        for x, y in sorted(wins)
    )


def pairwise_report(
    q: Preference,
    items: dict[str, ReviewItemRecord],
    judgments: Sequence[JudgmentRecord],
    rng: np.random.Generator,
) -> tuple[PairwiseReport, list[str]]:
    """The pairwise section from counted judgments of raters not excluded; notes say what
    could not be computed."""
    notes: list[str] = []
    outcomes: list[tuple[str, str, str, str]] = []
    raw = {"left": 1.0, "right": 0.0, "tie": 0.5}
    lefts: list[float] = []
    unknown = 0
    for j in judgments:
        answer = str(j.answers.get(q.id))
        if answer not in raw:
            continue
        lefts.append(raw[answer])
        models = models_of(items[j.item_key].source)
        if models is None:
            unknown += 1
            continue
        outcomes.append((j.item_key, *models, pairwise_outcome(answer, j.swapped)))
    if unknown:
        notes.append(f"{unknown} pairwise judgment(s) on items whose source names no models")
    ratings: tuple[ModelRating, ...] = ()
    method, note = "", None
    if outcomes:
        try:
            bt = bradley_terry(
                [(a, b, o) for _i, a, b, o in outcomes], rng=rng, n_resamples=N_RESAMPLES
            )
        except ValueError as e:
            notes.append(f"no Bradley-Terry ratings: {e}")
        else:
            method, note = bt.method, bt.note
            ratings = tuple(
                ModelRating(
                    m.name, m.elo, m.rank, m.rank_low, m.rank_high,
                    m.wins, m.losses, m.ties, m.unbounded,
                )
                for m in bt.models
            )  # fmt: skip
    report = PairwiseReport(
        question=q.id,
        pairs=_pair_rates(outcomes),
        ratings=ratings,
        rating_method=method,
        rating_note=note,
        left_share=left_share(lefts),
    )
    return report, notes

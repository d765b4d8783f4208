"""Online scores (and user feedback) logged against gateway traffic, read back by request.

``calipers ab`` writes them with ``Store.add_online_scores``; monitoring only reads them through
``Store.get_online_scores(pair_ids=)``, for the requests it reads whole (records with
``pair_id``, ``role``, ``scorer``, ``value``; NaN = unscorable). A store without that method
(an older calipers) has no online scores: the metrics say so instead of showing zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FEEDBACK", "ScoreIndex", "load_scores"]

FEEDBACK = "feedback"  # the scorer name under which user feedback is logged


@dataclass
class ScoreIndex:
    """``(pair_id, role) -> {scorer: value}``; ``note`` says why there are none."""

    values: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    scorers: list[str] = field(default_factory=list)
    note: str | None = None

    def of(self, pair_id: str, role: str) -> dict[str, float]:
        return self.values.get((pair_id, role), {})

    @classmethod
    def from_rows(cls, rows: Iterable[Any], note: str | None = None) -> ScoreIndex:
        """Index records with ``pair_id``, ``role``, ``scorer``, ``value`` (the latest record
        of a ``(pair_id, role, scorer)`` wins)."""
        out = cls(note=note)
        names: set[str] = set()
        for r in rows:
            v = float(r.value) if r.value is not None else math.nan
            out.values.setdefault((str(r.pair_id), str(r.role)), {})[str(r.scorer)] = v
            names.add(str(r.scorer))
        out.scorers = sorted(names, key=lambda s: (s == FEEDBACK, s))
        return out


def load_scores(store: Any, *, pair_ids: Sequence[str]) -> ScoreIndex:
    """The online scores of the requests ``pair_ids`` (those the monitor reads whole: all of
    a window's, or its sample), by ``pair_id``. Looked up by request, not by time: the cost
    is that of the requests read, however much traffic the period holds."""
    get = getattr(store, "get_online_scores", None)
    if get is None:
        return ScoreIndex(note="this store has no online scores (no get_online_scores)")
    index = ScoreIndex.from_rows(get(pair_ids=pair_ids) if pair_ids else [])
    if not index.values:
        index.note = "no online scores or feedback logged for the requests read"
    return index

"""Contamination flags for leaderboards: stored perturbation-gap studies whose benchmark
items lose more than fresh control items, beyond the interval."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from calipers.analysis import StoredRun
from calipers.contamination._perturbation import perturbation_gap
from calipers.runner import Methodology
from calipers.store import RunRecord, Store

__all__ = ["GAP_PREFIX", "contamination_flags"]

GAP_PREFIX = "gap-"
"""Study ids of `calipers contamination perturbation`: ``gap-<id>`` for the benchmark and
``gap-<id>-control`` for its control."""


def _studies(records: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    out: dict[str, list[RunRecord]] = defaultdict(list)
    for r in records:
        study = (r.config or {}).get("study") or ""
        if study.startswith(GAP_PREFIX) and r.status == "finished":
            out[study].append(r)
    return out


def contamination_flags(
    store: Store,
    records: Sequence[RunRecord] | None = None,
) -> dict[tuple[str, str], str]:
    """``(model identity key, task) -> flag`` for the newest perturbation-gap study of each
    model and task whose excess drop is below zero beyond its interval."""
    studies = _studies(records if records is not None else store.list_runs())
    flags: dict[tuple[str, str], tuple[object, str]] = {}
    for sid, members in studies.items():
        if sid.endswith("-control") or f"{sid}-control" not in studies:
            continue

        def load(rs: list[RunRecord]) -> list[StoredRun]:
            rs = sorted(rs, key=lambda r: r.created_at)
            return [StoredRun(r, tuple(store.get_samples(r.id))) for r in rs]

        report = perturbation_gap(load(members), load(studies[f"{sid}-control"]))
        hits = [
            (r, r.excess_drop)
            for r in report.rows
            if r.excess_drop is not None and r.excess_drop.high < 0
        ]
        if not hits:
            continue
        worst, excess = min(hits, key=lambda h: h[1].value)
        drop = -100 * excess.value
        text = (
            f"contamination: benchmark items lose {drop:.1f} pts more than fresh items "
            f"when {worst.perturbation} (study {sid})"
        )
        key = (Methodology.model_validate(members[0].methodology).model.key(), members[0].tasks[0])
        newest = max(r.created_at for r in members)
        if key not in flags or newest > flags[key][0]:  # type: ignore[operator]
            flags[key] = (newest, text)
    return {k: t for k, (_, t) in flags.items()}

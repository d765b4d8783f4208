"""Format noise floors from stored sensitivity studies, for flags in comparisons and
leaderboards: a difference between two models smaller than the floor of either could come
from the prompt format alone."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from calipers.runner import Methodology
from calipers.store import RunRecord

__all__ = ["Floor", "floor_flag", "format_floors", "study_references"]


@dataclass(frozen=True)
class Floor:
    value: float  # max - min of the study's formulation scores (a fraction, like the scores)
    study: str
    n_formulations: int


def _primary_value(run: RunRecord, task: str) -> float | None:
    ts = run.task_summary(task)
    est = ts.primary_estimate if ts else None
    return None if est is None or math.isnan(est.value) else est.value


def format_floors(runs: Sequence[RunRecord]) -> dict[tuple[str, str], Floor]:
    """``(model identity key, task) -> Floor`` from the newest study of each model and task
    (studies of two or more finished formulations)."""
    studies: dict[str, list[RunRecord]] = defaultdict(list)
    for r in runs:
        study = (r.config or {}).get("study")
        variant = (r.config or {}).get("variant") or {}
        if (
            variant.get("perturb")
            or variant.get("none_of_the_other")
            or variant.get("fresh_numbers")
        ):
            continue  # robustness and contamination variants change content, not format
        if study and r.status == "finished":
            studies[study].append(r)
    floors: dict[tuple[str, str], tuple[object, Floor]] = {}
    for study, members in studies.items():
        task = members[0].tasks[0]
        values = [v for r in members if (v := _primary_value(r, task)) is not None]
        if len(values) < 2:
            continue
        key = (Methodology.model_validate(members[0].methodology).model.key(), task)
        newest = max(r.created_at for r in members)
        floor = Floor(max(values) - min(values), study, len(values))
        if key not in floors or newest > floors[key][0]:  # type: ignore[operator]
            floors[key] = (newest, floor)
    return {k: f for k, (_, f) in floors.items()}


def study_references(runs: Sequence[RunRecord]) -> set[str]:
    """Ids of runs that are not a study's extra formulation: every run outside a study, and
    each study's reference (its first run)."""
    first: dict[str, RunRecord] = {}
    for r in runs:
        study = (r.config or {}).get("study")
        if study and (study not in first or r.created_at < first[study].created_at):
            first[study] = r
    return {
        r.id
        for r in runs
        if not (r.config or {}).get("study") or first[r.config["study"]].id == r.id
    }


def floor_flag(
    floors: Mapping[tuple[str, str], Floor],
    task: str,
    diff: float,
    model_keys: Sequence[str],
    other: str,
) -> str | None:
    """A flag when ``|diff|`` is below the larger floor of the models compared."""
    found = [f for k in model_keys if (f := floors.get((k, task))) is not None]
    if not found:
        return None
    worst = max(found, key=lambda f: f.value)
    if abs(diff) >= worst.value:
        return None
    return (
        f"within the format noise floor vs {other}: the difference "
        f"{100 * abs(diff):.1f} pts < {100 * worst.value:.1f} pts that format changes "
        f"alone moved the score (study {worst.study})"
    )

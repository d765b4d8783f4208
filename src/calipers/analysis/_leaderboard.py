"""``calipers leaderboard``: models ranked with rank intervals, per task.

Runs are ranked together only when their methodology for the task is the same (prompt,
few-shot, decoding, data...): each such group is its own board, and runs outside the largest
group are listed with what differs. Within a group each model's latest run counts, items are
those every run scored, and ranks come with bootstrap intervals over items; models that
cannot be separated share a tie group.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from calipers._util.seeding import derived_rng
from calipers.analysis._align import (
    StoredRun,
    common_ids,
    last_rows,
    methodology_differences,
    rows_of,
)
from calipers.analysis._floors import Floor, floor_flag, study_references
from calipers.analysis._saturation import saturation_flags
from calipers.errors import CalipersError
from calipers.runner import comparable_hash
from calipers.stats import rank_models
from calipers.types import Estimate

__all__ = ["Board", "BoardEntry", "leaderboard"]


class BoardEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    model: str
    score: Estimate
    rank: int
    rank_low: int
    rank_high: int
    tie_group: int
    flags: list[str]


class Board(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    metric: str
    n_items: int
    n_resamples: int
    method: str
    entries: list[BoardEntry]
    saturated: bool
    saturation_note: str | None
    unranked: list[dict[str, str]]
    flags: list[str] = []  # about the task: saturation, separation, items all get wrong


def _primary(run: StoredRun, task: str) -> str | None:
    ts = run.record.task_summary(task)
    return (ts.primary or None) if ts else None


def _latest_per_model(runs: Sequence[StoredRun]) -> list[StoredRun]:
    latest: dict[str, StoredRun] = {}
    for r in sorted(runs, key=lambda r: r.record.created_at):
        latest[r.methodology.model.key()] = r
    return list(latest.values())


def _scores(
    runs: Sequence[StoredRun], task: str, metric: str
) -> tuple[list[str], dict[str, npt.NDArray[np.float64]]]:
    """Labels and per-item scores on the items every run scored (errors excluded)."""
    per_run = []
    for r in runs:  # from the columns: a run's records are not read
        cols = r.columns(task)
        keep = np.zeros(len(cols), dtype=bool)
        if metric in cols.scores:
            keep = cols.ok & cols.has_score[metric]
        per_run.append((cols, last_rows(cols.sample_id, keep)))
    common = common_ids([lr for _c, lr in per_run])
    labels = [f"{r.record.model_name} ({r.record.id})" for r in runs]
    return labels, {
        lab: (
            cols.scores[metric][rows_of(common, *lr)] if common.size else np.array([], dtype=float)
        )
        for lab, (cols, lr) in zip(labels, per_run, strict=True)
    }


def _flags(
    entries: list[BoardEntry],
    group: list[StoredRun],
    task: str,
    floors: Mapping[tuple[str, str], Floor],
) -> list[BoardEntry]:
    """Each entry against the one ranked above it: within the format noise floor?"""
    keys = {r.record.id: r.methodology.model.key() for r in group}
    out = entries[:1]
    for above, e in itertools.pairwise(entries):
        flag = floor_flag(
            floors,
            task,
            e.score.value - above.score.value,
            [keys[e.run_id], keys[above.run_id]],
            above.model,
        )
        out.append(e.model_copy(update={"flags": [*e.flags, flag]}) if flag else e)
    return out


def _board(
    task: str,
    group: list[StoredRun],
    unranked: list[dict[str, str]],
    seed: int,
    n_resamples: int,
    floors: Mapping[tuple[str, str], Floor],
) -> Board | None:
    metric = _primary(group[0], task)
    if metric is None:
        return None
    labels, scores = _scores(group, task, metric)
    n_items = len(next(iter(scores.values())))
    rng = derived_rng(seed, task)
    lb = rank_models(scores, rng=rng, n_resamples=n_resamples)
    by_label = dict(zip(labels, group, strict=True))
    entries = [
        BoardEntry(
            run_id=by_label[m.name].record.id,
            model=by_label[m.name].record.model_name,
            score=m.score,
            rank=m.rank,
            rank_low=m.rank_low,
            rank_high=m.rank_high,
            tie_group=m.tie_group,
            flags=[],
        )
        for m in lb.models
    ]
    entries = _flags(entries, group, task, floors)
    return Board(
        task=task,
        metric=metric,
        n_items=n_items,
        n_resamples=lb.n_resamples,
        method=lb.method,
        entries=entries,
        saturated=lb.saturated,
        saturation_note=lb.saturation_note,
        unranked=unranked,
        flags=_task_flags(group, task, metric, lb),
    )


def _task_flags(group: list[StoredRun], task: str, metric: str, lb: Any) -> list[str]:
    """Item-level saturation flags (:func:`saturation`); none for a single model."""
    if len(group) < 2:
        return []
    try:
        return saturation_flags(group, task, metric=metric, ranking=lb)
    except CalipersError:
        return []


def leaderboard(
    runs: Sequence[StoredRun],
    *,
    tasks: Sequence[str] | None = None,
    seed: int = 0,
    n_resamples: int = 1000,
    floors: Mapping[tuple[str, str], Floor] | None = None,
    flags: Mapping[tuple[str, str], str] | None = None,
) -> list[Board]:
    """One board per task; ``runs`` are finished runs (the caller chooses which). The extra
    formulations of sensitivity studies are left out (each study's reference run counts);
    ``floors`` (see :func:`format_floors`) flag neighbours closer than a format noise floor;
    ``flags`` (``(model key, task) -> text``, e.g. contamination findings) go beside a
    model's score."""
    keep = study_references([r.record for r in runs])
    finished = [r for r in runs if r.record.status == "finished" and r.record.id in keep]
    names = list(tasks) if tasks else sorted({t for r in finished for t in r.record.tasks})
    boards = []
    for task in names:
        with_task = [r for r in finished if task in r.record.tasks and _primary(r, task)]
        groups: dict[str, list[StoredRun]] = defaultdict(list)
        for r in with_task:
            groups[comparable_hash(r.methodology, task)].append(r)
        if not groups:
            continue
        ordered = sorted(groups.values(), key=len, reverse=True)
        main = _latest_per_model(ordered[0])
        unranked = [
            {
                "run_id": r.record.id,
                "model": r.record.model_name,
                "why": "; ".join(methodology_differences(main[0], r, task)[:3]),
            }
            for g in ordered[1:]
            for r in g
        ]
        board = _board(task, main, unranked, seed, n_resamples, floors or {})
        if board is not None and flags:
            keys = {r.record.id: r.methodology.model.key() for r in main}
            board = board.model_copy(
                update={
                    "entries": [
                        e.model_copy(update={"flags": [*e.flags, flags[(keys[e.run_id], task)]]})
                        if (keys[e.run_id], task) in flags
                        else e
                        for e in board.entries
                    ]
                }
            )
        if board is not None:
            boards.append(board)
    return boards

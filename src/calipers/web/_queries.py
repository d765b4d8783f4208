"""The library calls behind the pages: the same ones the CLI makes, so a page and its command
always agree (``calipers runs``, ``compare``, ``leaderboard``, ``report``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from calipers.errors import ConfigError
from calipers.store import RunRecord, Store

if TYPE_CHECKING:
    from calipers.analysis import Board, ComparisonSet

__all__ = [
    "board_marks",
    "compare_calibrations",
    "compare_runs",
    "leaderboard_boards",
    "list_runs",
    "order_runs",
    "report_html",
]

MAX_LIMIT = 1000


def list_runs(store: Store, *, task: str | None, model: str | None, limit: int) -> list[RunRecord]:
    """As ``calipers runs``: newest first, filtered by task and model (spec or name)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise ConfigError(f"limit={limit} is out of range.", hint=f"Use 1 to {MAX_LIMIT}.")
    return store.list_runs(limit=limit, task=task or None, model=model or None)


def order_runs(ids: Sequence[str], baseline: str | None) -> list[str]:
    """The runs to compare, baseline first (else the first given), without repeats."""
    picked = [i for i in dict.fromkeys(x.strip() for x in ids) if i]
    if baseline:
        picked = [baseline, *(i for i in picked if i != baseline)]
    return picked


def compare_runs(
    store: Store,
    ids: Sequence[str],
    *,
    force: bool = False,
    correction: Literal["holm", "bh"] = "holm",
    all_metrics: bool = False,
) -> ComparisonSet:
    """As ``calipers compare``: paired, corrected, format noise floors flagged. Raises
    :class:`ConfigError` when the runs cannot be compared (the message says why)."""
    from calipers.analysis import compare, format_floors, load_runs

    if len(ids) < 2:
        raise ConfigError(
            "Pick at least two runs to compare.",
            hint="The first is the baseline; the others are compared with it.",
        )
    loaded = load_runs(store, ids)
    floors = format_floors(store.list_runs())
    return compare(
        loaded, all_metrics=all_metrics, correction=correction, force=force, floors=floors
    )


def leaderboard_boards(
    store: Store, *, tasks: Sequence[str] = (), seed: int = 0, resamples: int = 1000
) -> list[Board]:
    """As ``calipers leaderboard``: every finished run, ranked per task with rank intervals."""
    from calipers.analysis import format_floors, leaderboard, load_runs
    from calipers.contamination import contamination_flags

    records = store.list_runs()
    ids = tuple(r.id for r in records if r.status == "finished")
    runs = load_runs(store, ids) if ids else []
    extra = contamination_flags(store, records)
    return leaderboard(
        runs,
        tasks=list(tasks) or None,
        seed=seed,
        n_resamples=resamples,
        floors=format_floors(records),
        flags=extra,
    )


def board_marks(store: Store, boards: Sequence[Board]) -> list[list[dict[str, Any] | None]]:
    """As ``calipers leaderboard``: each entry's judge calibration (``board_calibrations``)."""
    from calipers.analysis import board_calibrations

    records = store.list_runs()
    return board_calibrations(boards, records, records)


def report_html(store: Store, run_id: str) -> str:
    """As ``calipers report RUN``: the full self-contained HTML report of one run."""
    from calipers.analysis import load_runs
    from calipers.reports import render_multi_html

    return render_multi_html(load_runs(store, [run_id]), saved=store.list_runs())


def compare_calibrations(store: Store, result: ComparisonSet) -> dict[int, dict[str, Any]]:
    """As ``calipers compare``: each judge-based row's calibration (``row_calibrations``)."""
    from calipers.analysis import row_calibrations

    ids = {i for r in result.rows for i in (r.run_a, r.run_b)}
    return row_calibrations(result.rows, [store.get_run(i) for i in ids], store.list_runs())

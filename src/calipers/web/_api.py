"""JSON endpoints mirroring the pages, for scripts: the same data, NaN sent as null."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import Response

from calipers._util.environment import calipers_version
from calipers.web._pages import Many, Text, store_of
from calipers.web._queries import (
    board_marks,
    compare_calibrations,
    compare_runs,
    leaderboard_boards,
    list_runs,
    order_runs,
)
from calipers.web._render import json_response
from calipers.web._views import Show, run_json, run_row_json, sample_json, sample_page

__all__ = ["router"]

router = APIRouter(prefix="/api")


@router.get("/runs")
def api_runs(
    request: Request, task: Text = None, model: Text = None, limit: Annotated[int, Query()] = 50
) -> Response:
    """As ``calipers runs --json``."""
    runs = list_runs(store_of(request), task=task, model=model, limit=limit)
    return json_response([run_row_json(r) for r in runs])


@router.get("/runs/{run_id}")
def api_run(request: Request, run_id: str) -> Response:
    """As ``calipers show RUN --json``."""
    store = store_of(request)
    return json_response(run_json(store.get_run(run_id), store.list_runs()))


@router.get("/runs/{run_id}/samples")
def api_samples(
    request: Request,
    run_id: str,
    task: Text = None,
    show: Annotated[Show, Query()] = "all",
    page_no: Annotated[int, Query(alias="page")] = 1,
    per_page: Annotated[int, Query(ge=1, le=500)] = 20,
) -> Response:
    """One page of a task's samples (all, failures or errors), as the run page shows."""
    store = store_of(request)
    run = store.get_run(run_id)
    samples = store.get_samples(run.id)
    chosen = task or (run.tasks[0] if run.tasks else "")
    p = sample_page(run, samples, chosen, show, page_no, per_page)
    return json_response(
        {
            "run": run.id,
            "task": p.task,
            "show": p.show,
            "page": p.page,
            "pages": p.pages,
            "total": p.total,
            "primary": p.primary,
            "samples": [sample_json(s) for s in p.items],
        }
    )


@router.get("/compare")
def api_compare(
    request: Request,
    run: Many = None,
    baseline: Text = None,
    force: bool = False,
    correction: Literal["holm", "bh"] = "holm",
    all_metrics: bool = False,
) -> Response:
    """As ``calipers compare --json``; a refusal is an error answer with the reason."""
    store = store_of(request)
    result = compare_runs(
        store,
        order_runs(run or [], baseline),
        force=force,
        correction=correction,
        all_metrics=all_metrics,
    )
    dumped = result.model_dump(mode="json")
    for i, st in compare_calibrations(store, result).items():
        dumped["rows"][i].update(st)
    return json_response(dumped)


@router.get("/leaderboard")
def api_leaderboard(request: Request, task: Many = None) -> Response:
    """As ``calipers leaderboard --json``."""
    store = store_of(request)
    boards = leaderboard_boards(store, tasks=task or ())
    dumped = [b.model_dump(mode="json") for b in boards]
    for board, marks in zip(dumped, board_marks(store, boards), strict=True):
        for entry, st in zip(board["entries"], marks, strict=True):
            if st is not None:
                entry.update(calibrated=st["calibrated"], judge_calibration=st)
    return json_response(dumped)


health = APIRouter()


@health.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    """No icon (pages say so with a data: URI; the full report does not, so browsers ask)."""
    return Response(status_code=204)


@health.get("/healthz")
def healthz(request: Request) -> Response:
    """Up, and the store answers."""
    store = store_of(request)
    store.list_runs(limit=1)
    return json_response({"status": "ok", "version": calipers_version(), "store": store.url})

"""The dashboard's HTML pages (server-rendered, no JavaScript)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from calipers.errors import CalipersError, ConfigError
from calipers.reports import diff_panels, diff_text, methodology_rows, num, task_views
from calipers.store import Store
from calipers.web._charts import forest_svg, plot_row
from calipers.web._queries import (
    board_marks,
    compare_calibrations,
    compare_runs,
    leaderboard_boards,
    list_runs,
    order_runs,
    report_html,
)
from calipers.web._render import page
from calipers.web._views import (
    SHOWS,
    Show,
    category_chart,
    primaries_chart,
    run_row,
    sample_page,
)

__all__ = ["router", "store_of"]

router = APIRouter()

Text = Annotated[str | None, Query()]
Many = Annotated[list[str] | None, Query()]


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store.get()
    return store


@router.get("/", include_in_schema=False)
def home() -> Response:
    return RedirectResponse("/runs", status_code=303)


@router.get("/runs", response_class=HTMLResponse)
def runs_page(
    request: Request, task: Text = None, model: Text = None, limit: Annotated[int, Query()] = 50
) -> Response:
    store = store_of(request)
    runs = list_runs(store, task=task, model=model, limit=limit)
    return page(
        request,
        "runs.html.j2",
        rows=[run_row(r) for r in runs],
        task=task or "",
        model=model or "",
        limit=limit,
    )


@router.get("/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    request: Request,
    run_id: str,
    task: Text = None,
    show: Annotated[Show, Query()] = "all",
    page_no: Annotated[int, Query(alias="page")] = 1,
) -> Response:
    store = store_of(request)
    run = store.get_run(run_id)
    samples = store.get_samples(run.id)
    tasks = task_views(run, samples, saved=store.list_runs())
    names = [t.name for t in tasks]
    if task and task not in names:
        raise ConfigError(
            f"Run {run.id} has no task {task!r}.", hint=f"Its tasks: {', '.join(names) or 'none'}."
        )
    chosen = task or (names[0] if names else "")
    browser = sample_page(run, samples, chosen, show, page_no) if chosen else None
    return page(
        request,
        "run.html.j2",
        run=run,
        tasks=tasks,
        card=methodology_rows(run.methodology, run.summary),
        chart=primaries_chart(run, tasks),
        category_charts={t.name: category_chart(t) for t in tasks},
        browser=browser,
        shows=SHOWS,
        elapsed=run.summary.elapsed_s if run.summary else None,
    )


@router.get("/runs/{run_id}/report", response_class=HTMLResponse)
def report_page(request: Request, run_id: str) -> Response:
    return HTMLResponse(report_html(store_of(request), run_id))


@router.get("/compare", response_class=HTMLResponse)
def compare_page(
    request: Request,
    run: Many = None,
    baseline: Text = None,
    force: bool = False,
    correction: Literal["holm", "bh"] = "holm",
    all_metrics: bool = False,
) -> Response:
    store = store_of(request)
    ids = order_runs(run or [], baseline)
    result, problem, marks = None, None, {}
    if len(ids) >= 2:
        try:
            result = compare_runs(
                store, ids, force=force, correction=correction, all_metrics=all_metrics
            )
            marks = compare_calibrations(store, result)
        except CalipersError as e:  # not comparable, unknown run: said on the page
            problem = e
    return page(
        request,
        "compare.html.j2",
        choices=store.list_runs(limit=100),
        picked=ids,
        baseline=ids[0] if ids else "",
        force=force,
        correction=correction,
        all_metrics=all_metrics,
        result=result,
        problem=problem,
        panels=diff_panels(result) if result else [],
        marks=marks,
        diff_text=diff_text,
        num=num,
    )


def _board_chart(board: Any) -> Any:
    rows = [
        plot_row(
            e.model,
            f"rank {e.rank} [{e.rank_low}–{e.rank_high}] · {e.run_id}",
            e.score,
        )
        for e in board.entries
    ]
    return forest_svg(rows, title=f"{board.task} · {board.metric}: scores with intervals")


@router.get("/leaderboard", response_class=HTMLResponse)
def leaderboard_page(request: Request, task: Many = None) -> Response:
    store = store_of(request)
    boards = leaderboard_boards(store, tasks=task or ())
    return page(
        request,
        "leaderboard.html.j2",
        boards=boards,
        marks=board_marks(store, boards),
        charts=[_board_chart(b) for b in boards],
        tasks=task or [],
    )

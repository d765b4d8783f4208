"""``calipers leaderboard``: models ranked with rank intervals, never bare ranks."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option

__all__ = ["leaderboard_cmd"]


@cli.command("leaderboard")
@click.option("-t", "--task", "tasks", multiple=True, help="Only these tasks (repeatable).")
@click.option(
    "--run",
    "run_ids",
    multiple=True,
    metavar="RUN",
    help="Rank only these runs (default: every finished run in the store).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--resamples", type=click.IntRange(min=100), default=1000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the boards as JSON.")
@store_option
@click.pass_obj
def leaderboard_cmd(
    obj: Context,
    /,
    tasks: tuple[str, ...],
    run_ids: tuple[str, ...],
    seed: int,
    resamples: int,
    as_json: bool,
) -> None:
    """Rank models per task with 95% rank intervals (bootstrap over items).

    Only runs with the same methodology for a task are ranked together; each model's latest
    such run counts, on the items every ranked run scored. Models that cannot be separated
    share a tie group; a warning says when the top of the board is within noise. A model
    closer to the one above it than either's format noise floor (from `calipers
    sensitivity` studies in the store) is flagged, and so is a model whose benchmark items
    lose more than fresh items under `calipers contamination perturbation`. A judge-based
    score whose judge has no calibration on record is marked "uncalibrated".
    """
    from calipers.analysis import board_calibrations, format_floors, leaderboard, load_runs
    from calipers.contamination import contamination_flags
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        records = store.list_runs()
        ids = run_ids or tuple(r.id for r in records if r.status == "finished")
        runs = load_runs(store, ids) if ids else []
        extra = contamination_flags(store, records)
    boards = leaderboard(
        runs,
        tasks=tasks or None,
        seed=seed,
        n_resamples=resamples,
        floors=format_floors(records),
        flags=extra,
    )
    marks = board_calibrations(boards, [r.record for r in runs], records)
    if as_json:
        dumped = [b.model_dump(mode="json") for b in boards]
        for board, mark in zip(dumped, marks, strict=True):
            for entry, st in zip(board["entries"], mark, strict=True):
                if st is not None:
                    entry.update(calibrated=st["calibrated"], judge_calibration=st)
        obj.print_json(dumped)
        return
    if not boards:
        obj.out.print("No finished runs to rank. Start with: calipers run")
    for b, mark in zip(boards, marks, strict=True):
        t = Table(
            title=f"{b.task} · {b.metric} · {b.n_items} items",
            title_justify="left",
            header_style="bold",
            caption=b.method,
            caption_justify="left",
        )
        for col in ("rank [95%]", "tie group", "model", "score [95% interval]", "run", "flags"):
            t.add_column(col)
        for e, st in zip(b.entries, mark, strict=True):
            est = e.score
            flags = [*e.flags, *(["uncalibrated judge"] if st and not st["calibrated"] else [])]
            interval = f"{e.rank} [{e.rank_low}–{e.rank_high}]"
            t.add_row(
                interval,
                str(e.tie_group),
                escape(e.model),
                est.format(percent=True),
                e.run_id,
                escape("; ".join(flags)),
            )
        obj.out.print(t)
        if b.saturated:
            obj.out.print(f"[yellow]saturated:[/] {escape(b.saturation_note or '')}")
        for flag in b.flags:
            obj.out.print(f"[yellow]flag:[/] {escape(flag)}")
        for u in b.unranked:
            obj.out.print(
                f"[dim]not ranked here: {escape(u['model'])} ({u['run_id']}): {escape(u['why'])}[/]"
            )

"""``calipers runs`` and ``calipers show``: what is in the store."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.cli._judge import judge_corrected_options, print_judge_corrected, read_human_labels
from calipers.cli._render import judge_marks, summary_table
from calipers.store import RunRecord, Store
from calipers.types import TaskSummary

__all__ = ["runs_cmd", "show_cmd"]


def _primary(run: RunRecord) -> str:
    if not run.summary:
        return "-"
    parts = []
    for task, ts in run.summary.tasks.items():
        if (est := ts.primary_estimate) is not None:
            parts.append(f"{task} {est.format(percent=True)}")
    return "; ".join(parts) or "-"


@cli.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--task", help="Only runs that include this task.")
@click.option("--model", help="Only runs of this model spec.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@store_option
@click.pass_obj
def runs_cmd(obj: Context, limit: int, task: str | None, model: str | None, as_json: bool) -> None:
    """List stored runs, newest first."""
    with Store.open(obj.store_url) as store:
        runs = store.list_runs(limit=limit, task=task, model=model)
    if as_json:
        rows = [
            {
                "id": r.id,
                "created_at": r.created_at,
                "status": r.status,
                "model": r.model,
                "model_name": r.model_name,
                "tasks": r.tasks,
                "summary": r.summary.model_dump(mode="json") if r.summary else None,
            }
            for r in runs
        ]
        obj.print_json(rows)
        return
    if not runs:
        obj.out.print("No runs stored yet. Start one with: calipers run")
        return
    t = Table(header_style="bold")
    for c in ("run", "created", "status", "model", "tasks", "primary score [95% interval]"):
        t.add_column(c)
    for r in runs:
        status = r.status if r.status == "finished" else f"[yellow]{r.status}[/]"
        t.add_row(
            r.id,
            str(r.created_at)[:19],
            status,
            escape(r.model),
            ", ".join(r.tasks),
            escape(_primary(r)),
        )
    obj.out.print(t)


@cli.command("show")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--failures",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Failing items to show per task.",
)
@click.option(
    "--sample",
    "sample_id",
    metavar="ID",
    help="Show this item step by step (an agent's or a conversation's episode: replies, "
    "tool calls and arguments, tool results, user turns, errors, latency, tokens).",
)
@click.option("--epoch", type=click.IntRange(min=0), help="With --sample: only this trial.")
@click.option("--steps", is_flag=True, help="Show every episode of the run step by step.")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
@judge_corrected_options
@store_option
@click.pass_obj
def show_cmd(
    obj: Context,
    run_id: str,
    failures: int,
    sample_id: str | None,
    epoch: int | None,
    steps: bool,
    as_json: bool,
    judge_corrected: tuple[str, ...],
    question: str | None,
    positive: str | None,
) -> None:
    """Show one run: scores with intervals, methodology, categories, worst items.

    RUN is a run id, a unique prefix of one, or "latest". A judge-scored run whose judge has
    no calibration on record is marked "uncalibrated". --judge-corrected CAMPAIGN|LABELS adds
    the judge-based score corrected by human labels (PPI++). --sample ID (or --steps for
    every episode) shows an agent's or a conversation's steps; with --json they are under
    "samples".
    """
    from calipers.analysis import judge_calibrations
    from calipers.reports import methodology_rows

    with Store.open(obj.store_url) as store:
        run = store.get_run(run_id)
        # whole records only where they are shown or needed; the rest reads columns
        wanted = bool(sample_id or steps or judge_corrected)
        samples = store.get_samples(run.id) if wanted else []
        saved = store.list_runs()
        marks = judge_marks(run, lambda: saved)
        corrected = (
            _corrected(obj, store, run, samples, judge_corrected, question, positive)
            if judge_corrected
            else None
        )
        n_stored = store.count_samples(run.id)
        shown_items = {} if as_json else _items_to_show(store, run, failures)
    chosen = _chosen(run, samples, sample_id, epoch, steps)
    if as_json:
        shown = {**_run_json(run), "judge_calibration": judge_calibrations(run, saved)}
        if corrected is not None:
            shown["judge_corrected"] = corrected.model_dump(mode="json")
        if chosen is not None:
            from calipers.cli._steps import sample_json

            shown["samples"] = [sample_json(s) for s in chosen]
        obj.print_json(shown)
        return
    if chosen is not None and sample_id is not None:  # one item: its steps only
        from calipers.cli._steps import print_steps

        obj.out.print(f"[bold]Run {run.id}[/]  {escape(run.model)}")
        print_steps(obj.out, chosen)
        return
    out = obj.out
    out.print(f"[bold]Run {run.id}[/]  {run.status}  {escape(run.model)}  {run.created_at}")
    if run.summary:
        out.print(summary_table(run.summary, marks=marks))
    else:
        why = f" {escape(run.error)}" if run.error else ""
        out.print(
            f"[yellow]Not finished[/]: {n_stored} samples stored.{why} "
            f"Resume with: calipers run --resume {run.id}"
        )
    card = Table(title="Methodology", title_justify="left", show_header=False, box=None)
    for label, value in methodology_rows(run.methodology, run.summary):
        card.add_row(f"[dim]{escape(label)}[/]", escape(value))
    out.print(card)
    from calipers.analysis import judge_agreement_line

    for task, ts in (run.summary.tasks if run.summary else {}).items():
        line = judge_agreement_line(run, task, saved)
        if line:  # judge-based scores carry the judge's measured agreement with people
            out.print(f"[bold]{escape(task)}[/]: {escape(line)}")
        failing, errored = shown_items.get(task, ([], []))
        _show_task(obj, task, ts, failing, errored)

    if corrected is not None:
        print_judge_corrected(obj, corrected)
    if chosen:
        from calipers.cli._steps import print_steps

        print_steps(out, chosen)


def _chosen(
    run: RunRecord, samples: Any, sample_id: str | None, epoch: int | None, steps: bool
) -> list[Any] | None:
    """The records --sample/--epoch/--steps ask for (None: none asked for)."""
    if sample_id is None and not steps:
        if epoch is not None:
            raise click.UsageError("--epoch goes with --sample ID.")
        return None
    from calipers.cli._steps import select_samples

    chosen = select_samples(samples, sample_id, epoch, steps)
    if sample_id is not None and not chosen:
        from calipers.errors import ConfigError

        ids = sorted({s.sample_id for s in samples})
        raise ConfigError(
            f"Run {run.id} has no item {sample_id!r}"
            + (f" at epoch {epoch}" if epoch is not None else "")
            + ".",
            hint="Its items: " + ", ".join(ids[:10]) + (" ..." if len(ids) > 10 else ""),
        )
    return chosen


def _corrected(
    obj: Context,
    store: Store,
    run: RunRecord,
    samples: Any,
    sources: tuple[str, ...],
    question: str | None,
    positive: str | None,
) -> Any:
    from calipers.analysis import judge_corrected

    if len(sources) != 1:
        raise click.UsageError("calipers show takes one --judge-corrected source.")
    labels, name = read_human_labels(obj, store, run, sources[0], None, None, question, positive)
    return judge_corrected(run, samples, labels, source=name)


def _items_to_show(store: Store, run: RunRecord, k: int) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per task: its first ``k`` failing items and first ``k`` errors (as
    ``reports.failing_items``/``error_items`` choose them), found from the columns and
    then read as whole records: only those ``2k`` records are read, whatever the run's size."""
    import numpy as np

    if not run.summary or not k:
        return {}
    found = {}
    for task, ts in run.summary.tasks.items():
        cols = store.sample_columns(run.id, task)
        order = np.lexsort((cols.sample_id.astype(str), cols.epoch, cols.position))
        failing: list[tuple[str, int]] = []
        if ts.primary and ts.primary in cols.scores:
            v = cols.scores[ts.primary]
            scored = cols.ok & cols.has_score[ts.primary] & ~np.isnan(v)
            if scored.any():
                unit = bool(((v[scored] >= 0) & (v[scored] <= 1)).all())
                bad = scored & ((v < 1.0) if unit else (v == v[scored].min()))
                failing = [(cols.sample_id[i], int(cols.epoch[i])) for i in order if bad[i]][:k]
        errors = [(cols.sample_id[i], int(cols.epoch[i])) for i in order if not cols.ok[i]][:k]
        found[task] = (
            store.get_samples_at(run.id, task, failing),
            store.get_samples_at(run.id, task, errors),
        )
    return found


def _show_task(
    obj: Context, task: str, ts: TaskSummary, failing: list[Any], errored: list[Any]
) -> None:
    from calipers.reports import worst_categories

    out = obj.out
    cats = worst_categories(ts, k=5)
    if cats:
        t = Table(title=f"{task}: worst categories", title_justify="left", header_style="bold")
        t.add_column("category")
        t.add_column("scored/total", justify="right")
        t.add_column(f"{ts.primary} [95% interval]", justify="right")
        for name, est, n in cats:
            unit = est.is_empty or (est.low >= 0 and est.high <= 1)  # not a 1-10 scale
            t.add_row(escape(name), f"{est.n}/{n}", est.format(percent=unit))
        out.print(t)
    if ts.primary:
        for rec in failing:
            out.print(
                f"[red]✗[/] {task}/{escape(rec.sample_id)}: answered "
                f"{escape(repr(rec.answer))}, expected {escape(repr(rec.target))}"
            )
    for rec in errored:
        out.print(f"[red]error[/] {task}/{escape(rec.sample_id)}: {escape(rec.error or '')}")
    if ts.n_tampering:
        out.print(
            f"[bold red]tampering[/] {task}: {ts.n_tampering} sample(s) tried to pass "
            f"without their tests running ({escape(', '.join(ts.tampering))}); "
            "scored as failures"
        )


def _run_json(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "status": run.status,
        "model": run.model,
        "model_name": run.model_name,
        "tasks": run.tasks,
        "methodology": run.methodology,
        "config": run.config,
        "summary": run.summary.model_dump(mode="json") if run.summary else None,
        "calipers_version": run.calipers_version,
    }

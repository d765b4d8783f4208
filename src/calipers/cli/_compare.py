"""``calipers compare``: paired comparison of stored runs."""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.cli._errors import print_error_changes
from calipers.cli._judge import judge_corrected_options, print_judge_corrected, read_human_labels
from calipers.types import Estimate

__all__ = ["compare_cmd"]


def _pct(est: Estimate, k: float) -> str:
    if est.is_empty:
        return "n/a (n=0)"
    return f"{est.value * k:.1f} [{est.low * k:.1f}, {est.high * k:.1f}]"


def _table(result: Any, marks: dict[int, Any] | None = None) -> Table:
    t = Table(
        header_style="bold",
        title=f"Paired comparison against {result.baseline} "
        f"({result.correction} correction over {len(result.rows)} comparisons)",
        title_justify="left",
    )
    for col in (
        "task",
        "metric",
        "B",
        "n",
        "A",
        "B score",
        "B − A [95%, unadj.]",
        "test",
        "p (adj.)",
        "effect",
        "MDE",
    ):
        t.add_column(col, justify="right" if col not in ("task", "metric", "B", "test") else "left")
    for i, r in enumerate(result.rows):
        a = r.score_a
        k = 100.0 if a.low >= 0 and a.high <= 1 else 1.0
        p = "n/a" if r.p_adjusted is None else f"{r.p_adjusted:.3g}"
        diff = _pct(r.diff, k)
        t.add_row(
            r.task,
            f"{r.metric} (uncalibrated)" if (marks or {}).get(i) is False else r.metric,
            escape(r.model_b),
            str(r.n),
            _pct(r.score_a, k),
            _pct(r.score_b, k),
            f"[bold]{diff}[/]" if r.significant else diff,
            r.test,
            p,
            "n/a" if r.effect_size is None else f"{r.effect_size:.2f} {r.effect_size_name}",
            "n/a" if r.mde is None else f"{r.mde * k:.1f}",
        )
    return t


@cli.command("compare")
@click.argument("runs", nargs=-1, required=True, metavar="RUN_A RUN_B [RUN...]")
@click.option("-t", "--task", "tasks", multiple=True, help="Only these tasks (repeatable).")
@click.option("--all-metrics", is_flag=True, help="Every metric, not only each task's primary.")
@click.option(
    "--correction",
    type=click.Choice(["holm", "bh"]),
    default="holm",
    show_default=True,
    help="Multiple-comparison correction of p-values.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--force", is_flag=True, help="Compare runs whose methodology differs (the output says so)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@judge_corrected_options
@store_option
@click.pass_obj
def compare_cmd(
    obj: Context,
    /,
    runs: tuple[str, ...],
    tasks: tuple[str, ...],
    all_metrics: bool,
    correction: str,
    alpha: float,
    seed: int,
    force: bool,
    as_json: bool,
    judge_corrected: tuple[str, ...],
    question: str | None,
    positive: str | None,
) -> None:
    """Is run B better than run A on the same items, and by how much?

    Pairs the runs item by item; every later run is compared with the first. Binary scores
    use McNemar's exact test and a score interval for the paired difference; other scores a
    sign-flip permutation test and a paired bootstrap interval. p-values are corrected across
    all rows. Runs whose methodology differs (prompt, few-shot, decoding, data...) are
    refused unless --force. A difference smaller than a model's format noise floor (from a
    `calipers sensitivity` study in the store) is flagged. For tasks with an error rule
    (`calipers errors`), the error types that grew or shrank follow (paired, Holm).

    \b
    Examples:
      calipers compare 20261130-0545 20261130-0612
      calipers compare BASE CAND1 CAND2 --correction bh --json
      calipers compare A B --judge-corrected CAMPAIGN

    Judge-based rows whose judge has no calibration on record are marked "uncalibrated".
    --judge-corrected (two runs) adds B - A of the judge-based score corrected by human
    labels (PPI++): one campaign or labels file for both runs, or one per run.
    """
    from calipers.analysis import compare, format_floors, load_runs
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        loaded = load_runs(store, runs)
        records = store.list_runs()
        floors = format_floors(records)
        corrected = (
            _corrected(obj, store, loaded, judge_corrected, question, positive, seed)
            if judge_corrected
            else None
        )
    result = compare(
        loaded,
        tasks=tasks or None,
        all_metrics=all_metrics,
        correction=correction,  # type: ignore[arg-type]
        alpha=alpha,
        seed=seed,
        force=force,
        floors=floors,
    )
    from calipers.analysis import compare_errors, row_calibrations

    status = row_calibrations(result.rows, [r.record for r in loaded], records)
    changes = [
        c
        for other in loaded[1:]
        if (c := compare_errors(loaded[0], other, tasks=tasks or None, alpha=alpha, seed=seed)).rows
    ]
    if as_json:
        dumped = result.model_dump(mode="json")
        for i, st in status.items():
            dumped["rows"][i].update(st)
        if corrected is not None:
            dumped["judge_corrected"] = corrected.model_dump(mode="json")
        if changes:  # only where a task has an error rule
            dumped["error_types"] = [c.model_dump(mode="json") for c in changes]
        obj.print_json(dumped)
        return
    if result.forced:
        obj.out.print(
            "[bold yellow]FORCED:[/] these runs differ in methodology; treat the "
            "numbers with suspicion:"
        )
        for m in result.mismatches:
            obj.out.print(f"  - {escape(m)}")
    obj.out.print(_table(result, {i: st["calibrated"] for i, st in status.items()}))
    for r in result.rows:
        mark = "[green]●[/]" if r.significant else "[dim]○[/]"
        excluded = sum(r.excluded.values())
        note = f" [dim]({excluded} unpaired or errored items excluded)[/]" if excluded else ""
        obj.out.print(f"{mark} {r.task}/{r.metric}: {escape(r.verdict)}{note}")
        for flag in r.flags:
            obj.out.print(f"    [yellow]flag:[/] {escape(flag)}")
    for c in changes:
        print_error_changes(obj, c)
    if corrected is not None:
        print_judge_corrected(obj, corrected)


def _corrected(
    obj: Context,
    store: Any,
    loaded: Any,
    sources: tuple[str, ...],
    question: str | None,
    positive: str | None,
    seed: int,
) -> Any:
    from calipers.analysis import judge_corrected_comparison

    if len(loaded) != 2 or len(sources) not in (1, 2):
        raise click.UsageError(
            "--judge-corrected compares two runs: give it once (a campaign holding both "
            "runs' items) or once per run."
        )
    arms = []
    for run, src in zip(loaded, sources * (3 - len(sources)), strict=True):
        labels, name = read_human_labels(
            obj, store, run.record, src, None, None, question, positive
        )
        arms.append((run.record, run.samples, labels, name))
    return judge_corrected_comparison(arms[0], arms[1], seed=seed)

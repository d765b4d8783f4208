"""``calipers errors RUN``: why the failing samples of a run failed, worst type first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.types import Estimate

if TYPE_CHECKING:
    from calipers.analysis import ErrorComparison, TaskErrors

__all__ = ["errors_cmd", "print_error_changes"]


def _pct(e: Estimate) -> str:
    if e.is_empty:
        return "n/a (n=0)"
    return f"{100 * e.value:.1f}% [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _clip(text: str | None, n: int = 160) -> str:
    s = " ".join((text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _task(obj: Context, t: TaskErrors, examples: int) -> None:
    how = f"rule: {t.rule}" if t.rule else "no rule for this task's scorers"
    errored = f"; {t.n_errored} errored (failed calls, not failures)" if t.n_errored else ""
    obj.out.print(
        f"[bold]{escape(t.task)}[/] — {t.n_failed} of {t.n_scored} scored samples failing "
        f"({escape(t.failing_rule)}): {_pct(t.failure_rate)}{errored} · {how}"
    )
    if not t.types:
        obj.out.print("  no failing sample")
        return
    table = Table(header_style="bold", title_justify="left")
    for col in ("error type", "count", "share of failures [95%]", "rate among scored [95%]"):
        table.add_column(col, justify="left" if col == "error type" else "right")
    for r in t.types:
        table.add_row(escape(r.type), str(r.count), _pct(r.share), _pct(r.rate))
    obj.out.print(table)
    if examples:
        for r in t.types:
            for ex in r.examples:
                what = escape(_clip(ex.detail))
                obj.out.print(f"  [bold]{escape(r.type)}[/] {escape(ex.sample_id)}: {what}")


def print_error_changes(obj: Context, result: ErrorComparison) -> None:
    """The error types that grew or shrank between two runs (``calipers compare``)."""
    if not result.rows:
        return
    t = Table(
        header_style="bold",
        title_justify="left",
        title=f"Error types, {result.run_b} against {result.run_a} (paired, Holm over "
        f"{len(result.rows)} types)",
    )
    for col in ("task", "error type", "n", "A rate", "B rate", "B − A [95%]", "p (Holm)", ""):
        t.add_column(col, justify="left" if col in ("task", "error type", "") else "right")
    for r in result.rows:
        diff = (
            "n/a"
            if r.diff.is_empty
            else (f"{100 * r.diff.value:+.1f} [{100 * r.diff.low:+.1f}, {100 * r.diff.high:+.1f}]")
        )
        p = "n/a" if r.p_adjusted is None else f"{r.p_adjusted:.3g}"
        mark = {"grew": "[red]grew[/]", "shrank": "[green]shrank[/]"}.get(r.change, "")
        t.add_row(
            escape(r.task),
            escape(r.type),
            str(r.n),
            _pct(r.rate_a),
            _pct(r.rate_b),
            f"[bold]{diff}[/]" if r.significant else diff,
            p,
            mark,
        )
    obj.out.print(t)


@cli.command("errors")
@click.argument("run", metavar="RUN")
@click.option("-t", "--task", help="Only this task of the run.")
@click.option(
    "--examples",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Examples shown per error type.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the taxonomy as JSON.")
@store_option
@click.pass_obj
def errors_cmd(obj: Context, /, run: str, task: str | None, examples: int, as_json: bool) -> None:
    """Why did the failing samples fail? Error types with shares and intervals, worst first.

    Each failing sample (primary metric below full credit) gets one error type by its task's
    rule: GSM8K and the word problems recompute every `a op b = c` step (calculation_slip,
    wrong_plan, no_working, extraction_failure, no_answer, truncated); multiple choice tells
    position_bias from a distractor and no_choice; code gives syntax_error, wrong_answer,
    exception:<Type>, timeout, tampering; IFEval the instruction not followed. A task with no
    rule shows its failures as unclassified. Samples whose model call failed are errors, not
    failures, and are counted apart. See docs/errors.md.

    \b
    Examples:
      calipers errors latest
      calipers errors 20261202-1617 --task gsm8k --examples 5
      calipers errors latest --json
    """
    from calipers.analysis import StoredRun, error_report
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        rec = store.get_run(run)
        stored = StoredRun(rec, tuple(store.get_samples(rec.id)))
    report = error_report(stored, task=task, examples=examples)
    if as_json:
        obj.print_json(report.model_dump(mode="json"))
        return
    obj.out.print(f"run {report.run_id} · {escape(report.model)}")
    for t in report.tasks:
        _task(obj, t, examples)

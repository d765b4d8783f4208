"""``calipers errors RUN``: why the failing samples of a run failed, worst type first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.types import Estimate

if TYPE_CHECKING:
    from collections.abc import Sequence

    from calipers.analysis import ErrorComparison, ErrorTaxonomy, TaskClassifier, TaskErrors
    from calipers.store import SampleKey, SampleRecord, Store
    from calipers.types import ErrorLabel

__all__ = ["errors_cmd", "print_error_changes"]


def _pct(e: Estimate) -> str:
    if e.is_empty:
        return "n/a (n=0)"
    return f"{100 * e.value:.1f}% [{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _clip(text: str | None, n: int = 160) -> str:
    s = " ".join((text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _task(obj: Context, t: TaskErrors, examples: int) -> None:
    judged = any(r.method == "judge" for r in t.types)
    how = (
        f"rule: {t.rule}"
        if t.rule
        else "no rule: the judge's open coding"
        if judged
        else "no rule for this task's scorers"
    )
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
        name = escape(r.type) + (" [dim](judge)[/]" if r.method == "judge" else "")
        table.add_row(name, str(r.count), _pct(r.share), _pct(r.rate))
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
@click.option(
    "--judge",
    metavar="MODEL",
    help="Label the failures of tasks with no rule by this judge's open coding: a note per "
    "failure, clustered into named categories (docs/errors-open-coding.md). Uncalibrated "
    "unless --campaign gives people's labels.",
)
@click.option(
    "--campaign",
    metavar="NAME",
    help="A review campaign whose final labels (question --question) calibrate the judge's "
    "categories: kappa, per-category precision and recall.",
)
@click.option(
    "--question",
    default="error_category",
    show_default=True,
    help="The campaign's question that holds the category.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the notes' clustering."
)
@click.option("--json", "as_json", is_flag=True, help="Print the taxonomy as JSON.")
@store_option
@click.pass_obj
def errors_cmd(
    obj: Context,
    /,
    run: str,
    task: str | None,
    examples: int,
    judge: str | None,
    campaign: str | None,
    question: str,
    seed: int,
    as_json: bool,
) -> None:
    """Why did the failing samples fail? Error types with shares and intervals, worst first.

    Each failing sample (primary metric below full credit) gets one error type by its task's
    rule: GSM8K and the word problems recompute every `a op b = c` step (calculation_slip,
    wrong_plan, no_working, extraction_failure, no_answer, truncated); multiple choice tells
    position_bias from a distractor and no_choice; code gives syntax_error, wrong_answer,
    exception:<Type>, timeout, tampering; IFEval the instruction not followed. A task with no
    rule shows its failures as unclassified. Samples whose model call failed are errors, not
    failures, and are counted apart. See docs/errors.md.

    With --judge, the failures of tasks with no rule are coded by the judge instead (a few
    words each), and the notes clustered into named categories; shown "uncalibrated" until
    --campaign names a review campaign in which people labelled a sample of them and the
    agreement passes (kappa's lower bound >= 0.6 on >= 40 items).

    \b
    Examples:
      calipers errors latest
      calipers errors 20261202-1617 --task gsm8k --examples 5
      calipers errors latest --judge openai:gpt-4o-mini --campaign errs
      calipers errors latest --json
    """
    from calipers.analysis import StoredRun, error_report
    from calipers.store import Store

    if campaign and not judge:
        raise click.UsageError("--campaign calibrates a judge's categories: give --judge too.")
    taxonomies: dict[str, ErrorTaxonomy] = {}
    with Store.open(obj.store_url) as store:
        rec = store.get_run(run)
        stored = StoredRun(rec, tuple(store.get_samples(rec.id)))
        classifier = None
        if judge:
            classifier = _judge_classifier(
                obj, store, rec.id, judge, campaign, question, seed, taxonomies
            )
        report = error_report(stored, task=task, examples=examples, classifier=classifier)
    if as_json:
        data = report.model_dump(mode="json")
        if taxonomies:
            data["judge_taxonomies"] = {t: tax.to_dict() for t, tax in taxonomies.items()}
        obj.print_json(data)
        return
    obj.out.print(f"run {report.run_id} · {escape(report.model)}")
    for t in report.tasks:
        _task(obj, t, examples)
        if t.task in taxonomies:
            _judge_status(obj, taxonomies[t.task])


def _judge_classifier(
    obj: Context,
    store: Store,
    run_id: str,
    judge: str,
    campaign: str | None,
    question: str,
    seed: int,
    out: dict[str, ErrorTaxonomy],
) -> TaskClassifier:
    """Label a task's failures by the judge's open coding (and calibrate it on the
    campaign's labels); each task's taxonomy is kept in ``out`` for the report."""
    from calipers.analysis import calibrate_error_taxonomy, error_campaign_labels, error_taxonomy

    def classify(task: str, failing: Sequence[SampleRecord]) -> dict[SampleKey, ErrorLabel]:
        total = len(failing)
        step = max(1, total // 10)

        def progress(_note: object, done: int, total: int) -> None:
            if done == total or done % step == 0:
                obj.err.print(f"  {task}: {done}/{total} failures coded by {judge}")

        tax = error_taxonomy(failing, judge, cache_store=store, seed=seed, progress=progress)
        if campaign:
            from calipers.review import final_labels

            camp = store.get_campaign(campaign)
            items = store.get_review_items(campaign)
            finals = final_labels(
                items,
                store.get_judgments(campaign),
                store.get_adjudications(campaign),
                question,
            )
            labels, unresolved = error_campaign_labels(
                campaign, camp.questions, items, finals, run_id=run_id
            )
            tax = calibrate_error_taxonomy(
                tax, labels, source=f"campaign {campaign}", n_unresolved=unresolved
            )
        out[task] = tax
        return tax.labels()

    return classify


def _judge_status(obj: Context, tax: ErrorTaxonomy) -> None:
    c = tax.calibration
    if c is None:
        how = "[yellow]uncalibrated[/]: no review campaign (--campaign) has labelled these"
    else:
        how = ("[green]" if tax.status == "calibrated" else "[yellow]") + f"{tax.status}[/]"
        reason = c.reason.removeprefix(f"{tax.status}: ")
        how += f": {escape(reason)}"
    n_err = len(tax.errors())
    failed = f"; {n_err} failures the judge could not code" if n_err else ""
    obj.out.print(f"  judge {escape(tax.judge)}: {how}{failed}")

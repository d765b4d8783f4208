"""``calipers judge-calibrate``: does a run's judge agree with people? (For a run scored by
``semantic_similarity``: calibrate its match threshold on the same kind of labels; for a
``rag_faithfulness`` claim judge, ``--planted``: its precision and recall on planted claims.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.errors import ModelCallError
from calipers.types import Estimate

__all__ = [
    "judge_calibrate_cmd",
    "judge_corrected_options",
    "print_judge_corrected",
    "read_human_labels",
]

F = TypeVar("F", bound=Callable[..., Any])

_QUESTION = click.option(
    "--question",
    default=None,
    metavar="ID",
    help="With a campaign: the question whose final labels are used (default: its only "
    "pass/fail, Likert or choice question).",
)
_POSITIVE = click.option(
    "--positive",
    default=None,
    metavar="VALUE",
    help="With a choice question: the answer that counts as a pass (1); the others are 0.",
)


def judge_corrected_options(f: F) -> F:
    """``--judge-corrected CAMPAIGN|LABELS`` with ``--question`` and ``--positive`` (for
    ``calipers show`` and ``calipers compare``)."""
    f = _POSITIVE(_QUESTION(f))
    return click.option(
        "--judge-corrected",
        "judge_corrected",
        multiple=True,
        metavar="CAMPAIGN|LABELS",
        help="Correct the judge-based score with human labels (PPI++): a review campaign's "
        "name or a labels file (compare: once for both runs, or once per run).",
    )(f)


def read_human_labels(
    obj: Context,
    store: Any,
    run: Any,
    source: str,
    task: str | None,
    scorer: str | None,
    question: str | None,
    positive: str | None,
) -> tuple[Any, str | None]:
    """(labels, their name) from a labels file (a path to an existing file) or a campaign."""
    from pathlib import Path

    from calipers.analysis import campaign_labels, campaign_question, judge_spec

    if Path(source).suffix.lower() in (".jsonl", ".json", ".csv") and not Path(source).is_file():
        raise click.BadParameter(f"{source}: no such labels file.", param_hint="labels")
    if Path(source).is_file():
        if question or positive:
            raise click.UsageError("--question and --positive go with a campaign, not a file.")
        return source, None
    from calipers.review import final_labels

    camp = store.get_campaign(source)
    items = store.get_review_items(source)
    qid = campaign_question(camp.questions, question)[0]
    finals = final_labels(items, store.get_judgments(source), store.get_adjudications(source), qid)
    t = judge_spec(run, task, scorer)[0]
    labels, unresolved = campaign_labels(
        source,
        camp.questions,
        items,
        finals,
        run_id=run.id,
        task=t,
        question=qid,
        positive=positive,
    )
    if unresolved:
        obj.err.print(
            f"[yellow]{unresolved} item(s) of campaign {escape(source)} have no final label "
            f"(a tie nobody adjudicated): left out. calipers review adjudicate resolves them.[/]"
        )
    return labels, f"campaign {source} ({qid}, {len(labels)} final labels)"


def _corrected_table(title: str, rows: list[dict[str, Any]]) -> Table:
    t = Table(header_style="bold", title=title, title_justify="left")
    for col in ("estimate", "value [95% interval]", "width", "human labels n", "judge labels"):
        t.add_column(col, justify="left" if col == "estimate" else "right")
    for r in rows:
        e: Estimate = r["estimate"]
        t.add_row(
            r["name"],
            e.format(),
            "n/a" if e.is_empty else f"{e.high - e.low:.3f}",
            str(r["n"]),
            str(r["judge"]),
        )
    return t


def print_judge_corrected(obj: Context, rep: Any) -> None:
    """Judge-only, human-only and PPI++ side by side, with n, N and the width ratio."""
    from calipers.analysis import JudgeCorrected, corrected_rows

    one = rep if isinstance(rep, JudgeCorrected) else rep.a
    what = (
        f"run {one.run_id}"
        if isinstance(rep, JudgeCorrected)
        else f"run {rep.b.run_id} - run {rep.a.run_id} ({rep.pairing})"
    )
    obj.out.print(
        _corrected_table(
            f"Judge-corrected {one.scorer} score · {escape(one.task)} · {what} · "
            f"judge {escape(one.judge)}",
            corrected_rows(rep),
        )
    )
    ratio = "n/a" if rep.width_ratio is None else f"{rep.width_ratio:.2f}"
    labels = one.labels if isinstance(rep, JudgeCorrected) else f"{rep.a.labels}; {rep.b.labels}"
    obj.out.print(
        f"n = {rep.n} human labels, N = {rep.n_unlabelled} judge-only items; width ratio "
        f"(corrected / human only) {ratio}. Labels: {escape(labels)}"
    )
    arms = [rep] if isinstance(rep, JudgeCorrected) else [rep.a, rep.b]
    for cav in dict.fromkeys(c for arm in arms for c in arm.caveats):
        obj.out.print(f"[dim]caveat: {escape(cav)}[/]")


def _est(e: Estimate | None) -> str:
    return "n/a" if e is None else e.format()


def _p(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def _print_judge(obj: Context, rep: Any, saved: bool) -> None:
    out = obj.out
    out.print(
        f"[bold]Judge calibration[/] · run {rep.run_id} · {escape(rep.task)} · "
        f"{rep.scorer} ({rep.mode}) · judge {escape(rep.judge)}\n"
        f"Labels: {escape(rep.labels_file)}: {rep.n_labels} labels, {rep.n_matched} "
        f"judged, {rep.n_judge_errors} errored, {rep.n_unmatched} not in the run"
    )
    t = Table(header_style="bold", title="Agreement with the human labels", title_justify="left")
    t.add_column("statistic")
    t.add_column("estimate [95% interval]", justify="right")
    t.add_row(f"[bold]{rep.statistic}[/]", _est(rep.agreement))
    for name, d in rep.secondary.items():
        t.add_row(name, _est(d))
    t.add_row("exact agreement", rep.exact_agreement.format(percent=True))
    t.add_row("judge score (run)", _est(rep.judge_score))
    out.print(t)
    c = Table(
        header_style="bold", title="Confusion (rows: human, columns: judge)", title_justify="left"
    )
    c.add_column("human \\ judge")
    for cat in rep.categories:
        c.add_column(f"{cat:g}", justify="right")
    for cat, row in zip(rep.categories, rep.confusion, strict=True):
        c.add_row(f"{cat:g}", *map(str, row))
    out.print(c)
    if rep.position_bias:
        pb = rep.position_bias
        out.print(
            f"Position bias: {pb.n_pairs} decided pairs, consistent across orders "
            f"{_est(pb.consistency)}; first position wins "
            f"{_est(pb.first_share)} of the flips (0.5 = no bias, p={_p(pb.p_value)})"
        )
    for label, lb in (
        ("all judged items", rep.length_bias),
        ("judge minus human, labelled items", rep.length_bias_vs_human),
    ):
        if lb:
            out.print(f"Length bias ({label}): Spearman {_est(lb.estimate)}, p={_p(lb.p_value)}")
    for cav in rep.caveats:
        out.print(f"[dim]caveat: {escape(cav)}[/]")
    if saved:
        out.print(f"[dim]Stored in run {rep.run_id}'s summary (judge_calibration).[/]")


def _print_threshold(obj: Context, cal: Any, path: str | None) -> None:
    obj.out.print(
        f"[bold]Similarity threshold[/] ({cal.criterion}, backend {cal.backend}): "
        f"{cal.threshold:.4f} (bootstrap {_est(cal.threshold_interval)})\n"
        f"{cal.n} labelled items ({cal.n_positive} match, {cal.n_negative} not); accuracy "
        f"out of sample {_est(cal.accuracy)}, in sample {_est(cal.in_sample_accuracy)}, "
        f"kappa {_est(cal.kappa)}"
    )
    if path:
        obj.out.print(
            f"Written to {escape(path)}: use it as "
            f"{{name: semantic_similarity, args: {{calibration: {escape(path)}}}}}"
        )


@cli.command("judge-calibrate")
@click.argument("run_id", metavar="RUN")
@click.option(
    "--labels",
    "labels",
    default=None,
    type=click.Path(dir_okay=False, exists=True),
    help="Human labels: JSONL/JSON/CSV with sample_id and label (epoch, task optional).",
)
@click.option(
    "--campaign",
    default=None,
    metavar="NAME",
    help="Read the human labels from this review campaign (its final labels of the run's items).",
)
@_QUESTION
@_POSITIVE
@click.option("-t", "--task", default=None, help="The task (default: the one judged).")
@click.option(
    "--scorer",
    type=click.Choice(
        [
            "llm_judge",
            "llm_judge_pairwise",
            "rag_faithfulness",
            "mt_bench_judge",
            "self_contradiction",
        ]
    ),
    default=None,
    help="The judge scorer, when a task has both.",
)
@click.option(
    "--planted",
    is_flag=True,
    help="Calibrate on planted truth: a rag_faithfulness judge on its items' planted claims "
    "(dyn_rag), a self_contradiction judge on planted conversations (--pairs); precision, "
    "recall, accuracy.",
)
@click.option(
    "--pairs",
    type=click.IntRange(min=2),
    default=200,
    show_default=True,
    help="--planted, self_contradiction: planted conversations (half contradict, seeded by "
    "--seed).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--no-save", is_flag=True, help="Do not store the result in the run's summary.")
@click.option(
    "--threshold-out",
    metavar="FILE",
    default=None,
    help="Calibrate the run's semantic_similarity threshold (labels: match 1/0) and write it here.",
)
@click.option(
    "--criterion",
    type=click.Choice(["youden", "f1"]),
    default="youden",
    show_default=True,
    help="semantic_similarity runs: what the threshold maximises.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_option
@click.pass_obj
def judge_calibrate_cmd(
    obj: Context,
    /,
    run_id: str,
    labels: str | None,
    campaign: str | None,
    question: str | None,
    positive: str | None,
    task: str | None,
    scorer: str | None,
    planted: bool,
    pairs: int,
    seed: int,
    no_save: bool,
    threshold_out: str | None,
    criterion: str,
    as_json: bool,
) -> None:
    """Measure a run's judge against human labels: agreement with intervals, confusion
    matrix, position and length bias; stored in the run so reports show it.

    \b
    Examples:
      calipers judge-calibrate latest --labels human.jsonl
      calipers judge-calibrate RUN --labels human.csv --task qa --json
      calipers judge-calibrate RUN --labels match.jsonl --threshold-out threshold.json
      calipers judge-calibrate RUN --campaign support-review --question correct
      calipers judge-calibrate RUN --planted
      calipers judge-calibrate RUN --planted --pairs 400   (a self_contradiction judge)
    """
    if planted:
        if labels or campaign or question or positive or threshold_out:
            raise click.UsageError("--planted measures against planted truth: no labels.")
        _planted(obj, run_id, task, no_save, as_json, pairs, seed)
        return
    if (labels is None) == (campaign is None):
        raise click.UsageError("Give the human labels: --labels FILE or --campaign NAME.")
    from calipers.analysis import (
        JUDGE_SCORERS,
        calibrate_judge,
        calibrate_similarity,
        save_judge_calibration,
    )
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        run = store.get_run(run_id)
        samples = store.get_samples(run.id)
        tasks = run.methodology.get("tasks", {})
        names = {
            s.get("name")
            for t, m in tasks.items()
            if task in (None, t)
            for s in m.get("scorers", [])
        }
        if campaign is None and (question or positive):
            raise click.UsageError("--question and --positive go with --campaign.")
        if threshold_out or (not names & set(JUDGE_SCORERS) and "semantic_similarity" in names):
            if labels is None:
                raise click.UsageError("A similarity threshold is calibrated from --labels FILE.")
            cal = calibrate_similarity(
                run,
                samples,
                labels,
                task=task,
                seed=seed,
                criterion="f1" if criterion == "f1" else "youden",
            )
            if threshold_out:
                cal.save(threshold_out)
            if as_json:
                obj.print_json(cal.model_dump(mode="json"))
            else:
                _print_threshold(obj, cal, threshold_out)
            return
        found, source = read_human_labels(
            obj, store, run, labels or campaign or "", task, scorer, question, positive
        )
        rep = calibrate_judge(
            run, samples, found, task=task, scorer=scorer, seed=seed, source=source
        )
        if not no_save:
            save_judge_calibration(store, rep)
    if as_json:
        obj.print_json(rep.model_dump(mode="json"))
        return
    _print_judge(obj, rep, not no_save)


def _print_planted(
    obj: Context, rep: Any, saved: bool, head: str, label: str, yes: str, no: str
) -> None:
    """A planted calibration (claims, contradictions): the head lines, accuracy, precision and
    recall of the ``label`` verdict, the confusion counts, errors, caveats."""
    (tp, fn), (fp, tn) = rep.confusion
    obj.out.print(head)
    t = Table(header_style="bold", title=f'The "{label}" verdict', title_justify="left")
    t.add_column("statistic")
    t.add_column("estimate [95% interval]", justify="right")
    t.add_row("[bold]accuracy[/]", rep.agreement.format(percent=True))
    t.add_row(f"precision (judged {yes} that are)", rep.precision.format(percent=True))
    t.add_row(f"recall ({yes} that were caught)", rep.recall.format(percent=True))
    obj.out.print(t)
    obj.out.print(
        f"Confusion (truth \\ judge): {yes} {tp} {yes}, {fn} {no}; {no} {fp} {yes}, {tn} {no}"
    )
    for err in rep.errors:
        obj.out.print(f"[red]error[/] {escape(err)}")
    for cav in rep.caveats:
        obj.out.print(f"[dim]caveat: {escape(cav)}[/]")
    if saved:
        obj.out.print(f"[dim]Stored in run {rep.run_id}'s summary (judge_calibration).[/]")


def _print_claims(obj: Context, rep: Any, saved: bool) -> None:
    head = (
        f"[bold]Claim judge calibration[/] · run {rep.run_id} · {escape(rep.task)} · "
        f"rag_faithfulness · judge {escape(rep.judge)}\n"
        f"Planted claims: {rep.n_claims} on {rep.n_items} items, {rep.n_matched} judged, "
        f"{rep.n_judge_errors} item(s) errored"
    )
    _print_planted(obj, rep, saved, head, "unsupported", "unsupported", "supported")


def _print_contradictions(obj: Context, rep: Any, saved: bool) -> None:
    head = (
        f"[bold]Contradiction judge calibration[/] · run {rep.run_id} · {escape(rep.task)} · "
        f"self_contradiction · judge {escape(rep.judge)}\n"
        f"Planted conversations: {rep.n_pairs} (seed {rep.seed}), {rep.n_matched} pairs "
        f"judged, {rep.n_judge_errors} errored"
    )
    _print_planted(obj, rep, saved, head, "contradiction", "contradicting", "clean")


def _planted(
    obj: Context,
    run_id: str,
    task: str | None,
    no_save: bool,
    as_json: bool,
    pairs: int,
    seed: int,
) -> None:
    import asyncio

    from calipers.analysis import (
        calibrate_claim_judge,
        calibrate_contradiction_judge,
        contradiction_judge,
        planted_samples,
        save_judge_calibration,
    )
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        run = store.get_run(run_id)
        found = contradiction_judge(run, task)
        if found is not None:
            name, judge = found
            crep = asyncio.run(
                calibrate_contradiction_judge(judge, n=pairs, seed=seed, task=name, run_id=run.id)
            )
            if crep.n_matched == 0:
                first = f" First: {crep.errors[0]}" if crep.errors else ""
                raise ModelCallError(
                    f"The judge {crep.judge} gave no readable verdict on any of the "
                    f"{crep.n_pairs} planted pairs, so nothing was measured or saved.{first}",
                    hint="Check the judge model and its output format; it must answer with "
                    'a JSON object {"contradiction": true | false}.',
                )
            if not no_save:
                save_judge_calibration(store, crep)
            if as_json:
                obj.print_json(crep.model_dump(mode="json"))
            else:
                _print_contradictions(obj, crep, not no_save)
            return
        name, client, items = planted_samples(run, task)
        rep = asyncio.run(calibrate_claim_judge(items, client, task=name, run_id=run.id))
        if rep.n_matched == 0:  # nothing measured: no calibration may lift the mark
            first = f" First: {rep.errors[0]}" if rep.errors else ""
            raise ModelCallError(
                f"The judge {rep.judge} gave no readable verdict on any of the {rep.n_items} "
                f"items with planted claims, so nothing was measured or saved.{first}",
                hint="Check the judge model and its output format; a judge must answer the "
                "verification prompt with JSON verdicts.",
            )
        if not no_save:
            save_judge_calibration(store, rep)
    if as_json:
        obj.print_json(rep.model_dump(mode="json"))
        return
    _print_claims(obj, rep, not no_save)

"""``calipers judge-calibrate``: does a run's judge agree with people? (For a run scored by
``semantic_similarity``: calibrate its match threshold on the same kind of labels.)"""

from __future__ import annotations

from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.types import Estimate

__all__ = ["judge_calibrate_cmd"]


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
    required=True,
    type=click.Path(dir_okay=False),
    help="Human labels: JSONL/JSON/CSV with sample_id and label (epoch, task optional).",
)
@click.option("-t", "--task", default=None, help="The task (default: the one judged).")
@click.option(
    "--scorer",
    type=click.Choice(["llm_judge", "llm_judge_pairwise"]),
    default=None,
    help="The judge scorer, when a task has both.",
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
    labels: str,
    task: str | None,
    scorer: str | None,
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
    """
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
        if threshold_out or (not names & set(JUDGE_SCORERS) and "semantic_similarity" in names):
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
        rep = calibrate_judge(run, samples, labels, task=task, scorer=scorer, seed=seed)
        if not no_save:
            save_judge_calibration(store, rep)
    if as_json:
        obj.print_json(rep.model_dump(mode="json"))
        return
    _print_judge(obj, rep, not no_save)

"""``calipers audit`` (items whose gold label is probably wrong) and ``calipers items``
(difficulty, discrimination and saturation of a task over stored runs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, cli, store_option
from calipers.errors import ConfigError
from calipers.types import Estimate

__all__ = ["audit_cmd", "items_cmd"]


def _est(e: Estimate, *, points: bool = False) -> str:
    if e.is_empty:
        return "n/a (n=0)"
    if points:
        return f"{100 * e.value:+.1f} [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"
    return e.format(percent=True)


def _short(text: str | None, width: int = 40) -> str:
    if text is None:
        return "?"
    one = " ".join(text.split())
    return escape(one if len(one) <= width else one[: width - 1] + "…")


def _load(obj: Context, run_ids: Sequence[str], task: str | None) -> tuple[list[Any], str]:
    from calipers.analysis import load_runs
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        runs = load_runs(store, run_ids)
    if task is not None:
        return runs, task
    shared = [t for t in runs[0].record.tasks if all(t in r.record.tasks for r in runs)]
    if len(shared) != 1:
        raise ConfigError(
            f"These runs share {len(shared)} tasks; say which one to examine.",
            hint=f"Use --task with one of: {', '.join(shared) or '(none in common)'}.",
        )
    return runs, shared[0]


def _scores_table(rep: Any) -> Table:
    t = Table(
        title="Score on all items and without the flagged ones",
        title_justify="left",
        header_style="bold",
    )
    for col in ("run", "model", "formulation", "all items", "audited", "shift (points)"):
        t.add_column(col, justify="right" if col in ("all items", "audited") else "left")
    for r in rep.runs:
        t.add_row(
            r.run_id,
            escape(r.model),
            r.formulation or "default",
            _est(r.all_items),
            _est(r.audited),
            _est(r.shift, points=True),
        )
    return t


def _flagged_table(rep: Any, limit: int) -> Table:
    t = Table(
        title=f"Flagged items (first {min(limit, len(rep.flagged))} of {len(rep.flagged)})",
        title_justify="left",
        header_style="bold",
    )
    for col in ("item", "gold", "agreed", "votes", "models", "confidence", "annotation"):
        t.add_column(col)
    for f in rep.flagged[:limit]:
        conf = "n/a" if f.mean_confidence is None else f"{f.mean_confidence:.2f}"
        if f.without_confidence:
            conf += f" (+{f.without_confidence} generated)"
        ann = "-" if f.annotation is None else f.annotation.error_type
        if f.annotation is not None and f.annotation.correct_answer is not None:
            ann += f" (proposed {chr(65 + f.annotation.correct_answer)})"
        t.add_row(
            escape(f.id),
            f"{f.gold or '?'}. {_short(f.gold_text)}",
            f"{f.agreed}. {_short(f.agreed_text)}",
            f"{f.votes}/{f.voters}",
            escape(", ".join(f.models)),
            conf,
            escape(ann),
        )
    return t


def _agreement_table(rep: Any) -> Table:
    t = Table(title="Flags against the annotations", title_justify="left", header_style="bold")
    for col in ("against", "items", "TP", "FP", "FN", "precision", "recall", "base rate"):
        t.add_column(col, justify="left" if col == "against" else "right")
    for a in rep.agreement:
        t.add_row(
            a.against,
            str(a.n_items),
            str(a.tp),
            str(a.fp),
            str(a.fn),
            _est(a.precision),
            _est(a.recall),
            _est(a.base_rate),
        )
    return t


def _print_audit(obj: Context, rep: Any, limit: int) -> None:
    rule = (
        f"at least {rep.min_agree}" if rep.min_agree is not None else "a majority (and at least 2)"
    )
    obj.out.print(
        f"[bold]Label audit[/] · {rep.task} · {rep.metric} · {rep.n_items} items · "
        f"{rep.n_runs} runs of {rep.n_models} model(s) · formulations "
        f"{', '.join(rep.formulations)}\n"
        f"Flag rule: {rule} of the runs that answered agree on one non-gold option, each "
        f"with confidence ≥ {rep.min_confidence:g}, from ≥ {rep.min_models} model(s).\n"
        f"Flagged: [bold]{len(rep.flagged)}[/] of {rep.n_items} items "
        f"({100 * len(rep.flagged) / max(1, rep.n_items):.1f}%)."
    )
    obj.out.print(_scores_table(rep))
    if rep.flagged and limit > 0:
        obj.out.print(_flagged_table(rep, limit))
    obj.out.print(f"Annotations: {escape(rep.annotations)}")
    if rep.agreement:
        obj.out.print(_agreement_table(rep))
        m = rep.correction_match
        if m and m["n"]:
            obj.out.print(
                f"Flagged wrong-label items with a proposed answer: the agreed "
                f"option is the annotators' in {m['agreed_equals_proposed']} of "
                f"{m['n']}."
            )
    for c in rep.caveats:
        obj.out.print(f"[dim]caveat: {escape(c)}[/]")


@cli.command("audit")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option(
    "-t", "--task", default=None, help="The task to audit (default: the only task all runs share)."
)
@click.option(
    "--min-agree",
    type=click.IntRange(min=1),
    default=None,
    help="Votes needed for a flag [default: a majority of the runs that answered, at least 2].",
)
@click.option(
    "--min-confidence",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="Confidence (softmax over the options) each vote needs.",
)
@click.option(
    "--min-models",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Distinct models among the votes.",
)
@click.option(
    "--data-dir",
    envvar="CALIPERS_DATA",
    default=None,
    metavar="DIR",
    help="Where the task data are now, if not where the runs read them.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Bootstrap seed (non-binary scores only).",
)
@click.option(
    "--limit-items",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Flagged items to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the audit as JSON.")
@store_option
@click.pass_obj
def audit_cmd(
    obj: Context,
    /,
    runs: tuple[str, ...],
    task: str | None,
    min_agree: int | None,
    min_confidence: float,
    min_models: int,
    data_dir: str | None,
    seed: int,
    limit_items: int,
    as_json: bool,
) -> None:
    """Flag items whose gold label is probably wrong: the runs agree, confidently, on
    another option.

    Reports each run's score on all items and on the unflagged ones, and, where the items
    carry annotations (MMLU-Redux), the precision and recall of the flags against them.

    \b
    Examples:
      calipers audit RUN1 RUN2 RUN3 --task mmlu_redux
      calipers audit RUN1 RUN2 --min-confidence 0.7 --min-models 2 --json
    """
    from calipers.analysis import audit

    loaded, name = _load(obj, runs, task)
    rep = audit(
        loaded,
        name,
        min_agree=min_agree,
        min_confidence=min_confidence,
        min_models=min_models,
        data_dir=data_dir,
        seed=seed,
    )
    if as_json:
        obj.print_json(rep.model_dump(mode="json"))
        return
    _print_audit(obj, rep, limit_items)


def _print_items(obj: Context, rep: Any) -> None:
    st = rep.items
    obj.out.print(
        f"[bold]Items[/] · {rep.task} · {rep.metric} · {rep.n_items} items scored "
        f"by all {rep.n_models} runs"
    )
    best = rep.best
    sep = (
        f"separates the models: {rep.n_tie_groups} tie groups"
        if rep.separates
        else "does not separate the models: one tie group"
    )
    flags = ("[yellow]" + escape("; ".join(rep.flags)) + "[/]") if rep.flags else "none"
    head = "n/a" if rep.headroom is None else f"{100 * rep.headroom:.1f} points"
    obj.out.print(
        f"Verdict: {sep}; top group: {escape(', '.join(rep.top_tied))}\n"
        f"Flags: {flags}\nBest: {escape(rep.best_model)} "
        f"{best.format(percent=True)}; headroom above its interval: {head}"
    )
    t = Table(header_style="bold", title="Items answered alike", title_justify="left")
    for col in ("every run right", "every run wrong", "all the same", "discrimination", "negative"):
        t.add_column(col, justify="right")
    med = "n/a" if st.median_discrimination is None else f"{st.median_discrimination:.2f}"
    t.add_row(
        _est(st.all_right),
        _est(st.all_wrong),
        _est(st.same),
        f"median {med} over {st.n_discrimination_defined}",
        str(st.n_negative_discrimination),
    )
    obj.out.print(t)
    worst = st.least_discriminating(10)
    if worst:
        w = Table(header_style="bold", title="Least discriminating items", title_justify="left")
        for col in ("item", "category", "difficulty", "discrimination"):
            w.add_column(
                col, justify="right" if col in ("difficulty", "discrimination") else "left"
            )
        for r in worst:
            w.add_row(
                escape(r.id),
                escape(r.category or "-"),
                f"{r.difficulty:.2f}",
                f"{r.discrimination:+.2f}",
            )
        obj.out.print(w)
    for n in st.notes:
        obj.out.print(f"[dim]note: {escape(n)}[/]")


@cli.command("items")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option(
    "-t", "--task", default=None, help="The task (default: the only task all runs share)."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--resamples", type=click.IntRange(min=100), default=1000, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@store_option
@click.pass_obj
def items_cmd(
    obj: Context,
    /,
    runs: tuple[str, ...],
    task: str | None,
    seed: int,
    resamples: int,
    as_json: bool,
) -> None:
    """Item difficulty and discrimination, and whether the task still separates the models.

    One run per model, with the same methodology, on the items every run scored.
    Discrimination is each item's correlation with the runs' score on the other items.

    \b
    Example:
      calipers items RUN1 RUN2 RUN3 --task arc_easy
    """
    from calipers.analysis import saturation

    loaded, name = _load(obj, runs, task)
    rep = saturation(loaded, name, seed=seed, n_resamples=resamples)
    if as_json:
        obj.print_json(rep.model_dump(mode="json"))
        return
    _print_items(obj, rep)

"""``calipers plan``: items needed to detect a difference, and what they cost."""

from __future__ import annotations

from typing import Any

import click

from calipers.cli._app import Context, cli, store_option
from calipers.errors import ConfigError

__all__ = ["plan_cmd"]


def _items_available(task: str | None, pilots: list[Any]) -> int | None:
    """How many items a fixed task has; None for generated tasks (any number). A task known
    only from a pilot run counts the items of that run if it was not limited."""
    if task is None:
        return None
    from calipers.errors import UnknownNameError
    from calipers.tasks import LoadContext, resolve_task

    try:
        [t] = resolve_task(task)[:1]
    except UnknownNameError:
        for p in pilots:
            m = p.methodology.tasks.get(task)
            if m is not None:
                return None if m.dynamic or m.limit is not None else m.n_items
        raise
    return None if t.dynamic else len(t.load(LoadContext()))


def _plan_review(
    obj: Context, n: int, width: float | None, rate: float | None, icc: float, as_json: bool
) -> None:
    from calipers.review import k_for_width

    if width is None:
        raise ConfigError("--review-items needs --width (the half-width wanted, e.g. 0.05).")
    plan = k_for_width(width, n, rate=0.5 if rate is None else rate, icc=icc)
    if as_json:
        obj.print_json(plan.model_dump(mode="json"))
        return
    obj.out.print(f"{plan.sentence()}.")
    obj.out.print(
        f"  calipers review create NAME --from ... --questions q.yaml --k {plan.k}  "
        f"({n * plan.k:,} judgments)"
    )


@cli.command("plan")
@click.option("-t", "--task", help="Task to plan for (default: the pilot run's task).")
@click.option(
    "--delta",
    type=float,
    help="Smallest difference in accuracy worth detecting, e.g. 0.03.",
)
@click.option(
    "--review-items",
    type=click.IntRange(1),
    metavar="N",
    help="Plan a human review instead: judgments per item (k) for N items to reach --width.",
)
@click.option(
    "--width",
    type=float,
    help="With --review-items: the 95% half-width wanted on a rate, e.g. 0.05.",
)
@click.option(
    "--icc",
    type=click.FloatRange(0, 1),
    default=0.5,
    show_default=True,
    help="With --review-items: how much raters of one item agree (share of variance).",
)
@click.option(
    "--baseline-acc",
    type=click.FloatRange(0, 1),
    help="Expected accuracy of the baseline (default: from --pilot, else 0.5).",
)
@click.option(
    "--correlation",
    type=click.FloatRange(-1, 1),
    help="Correlation of the two models' per-item scores (default: from two pilots, else 0).",
)
@click.option(
    "--pilot",
    "pilots",
    multiple=True,
    metavar="RUN",
    help="A small run of the task: gives accuracy, seconds and tokens per item; "
    "two pilots of two models also give the correlation.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option(
    "--power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@store_option
@click.pass_obj
def plan_cmd(
    obj: Context,
    /,
    task: str | None,
    delta: float | None,
    review_items: int | None,
    width: float | None,
    icc: float,
    baseline_acc: float | None,
    correlation: float | None,
    pilots: tuple[str, ...],
    alpha: float,
    power: float,
    as_json: bool,
) -> None:
    """How many items to detect a difference of --delta between two models (paired design,
    80% power, alpha 0.05), and the time and tokens that costs.

    \b
    Examples:
      calipers plan --delta 0.03 --baseline-acc 0.7 --correlation 0.5
      calipers plan -t dyn_arithmetic --delta 0.05 --pilot RUN_A --pilot RUN_B
      calipers plan --review-items 200 --width 0.05     # k for a review campaign

    With --review-items it sizes a human review campaign instead (what `calipers review
    create --width` does): the judgments per item that give a rate (--baseline-acc, default
    0.5) an interval of about ±--width, items being the unit.
    """
    if review_items is not None:
        _plan_review(obj, review_items, width, baseline_acc, icc, as_json)
        return
    if delta is None:
        raise ConfigError("Give --delta (or --review-items N --width W to size a review).")
    from calipers.analysis import load_runs, plan_size
    from calipers.store import Store

    loaded: list[Any] = []
    if pilots:
        with Store.open(obj.store_url) as store:
            loaded = load_runs(store, pilots)
    p = plan_size(
        delta=delta,
        task=task,
        baseline_acc=baseline_acc,
        correlation=correlation,
        pilots=loaded,
        alpha=alpha,
        power=power,
        items_available=_items_available(
            task or (loaded[0].record.tasks[0] if loaded else None), loaded
        ),
    )
    if as_json:
        obj.print_json(p.model_dump(mode="json"))
        return
    out = obj.out
    out.print(
        f"To detect a difference of [bold]{p.delta:.1%}[/] with {p.power:.0%} power at "
        f"alpha {p.alpha:g}{f' on {p.task}' if p.task else ''}:"
    )
    out.print(f"  [bold]{p.n_paired:,}[/] items, both models on the same items (paired)")
    out.print(f"  {p.n_unpaired:,} items per model if the models saw different items")
    out.print(
        f"  baseline accuracy {p.baseline_acc:.1%} ({p.baseline_source}); "
        f"correlation {p.correlation:.2f} ({p.correlation_source})"
    )
    if p.items_available is not None:
        out.print(f"  the task has {p.items_available:,} items")
    if p.est_seconds_per_model is not None:
        out.print(
            f"  cost per model, from the pilot: about {p.est_seconds_per_model / 60:.0f} "
            f"min and {p.est_tokens_per_model:,.0f} tokens "
            f"({p.seconds_per_item:.2f} s and {p.tokens_per_item:.0f} tokens per item)"
        )
    for note in p.notes:
        out.print(f"[yellow]note:[/] {note}")

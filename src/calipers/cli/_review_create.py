"""``calipers review create``: a campaign from a run, two runs, a suite, gateway traffic or a
file, with its questions, k and quality controls. The work is in :mod:`calipers.review`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import click

from calipers.cli._app import Context, store_option
from calipers.cli._review import review_group
from calipers.errors import ConfigError, DataError

if TYPE_CHECKING:
    from calipers.review import SourceItems
    from calipers.store import ReviewKind, Store

__all__: list[str] = []


def _when(text: str | None) -> Any:
    if text is None:
        return None
    from calipers._util.clock import utc_now
    from calipers.monitor import parse_when

    return parse_when(text, utc_now())


def _uncovered(
    store: Store, since: Any, until: Any, suites: tuple[str, ...], quantile: float | None
) -> Any:
    """The exchanges ``calipers monitor`` flags as not covered (what ``monitor export``
    exports): outliers and new clusters against the reference traffic and ``suites``."""
    from calipers.monitor import MonitorConfig, monitor

    def run() -> list[Any]:
        more = {} if quantile is None else {"outlier_quantile": quantile}
        config = MonitorConfig(since=since, until=until, suites=list(suites), **more)
        report = monitor(store, config)
        assert report.novelty is not None
        return [it.exchange for it in report.novelty.outliers]

    return run


def _source(store: Store, spec: str, kind: ReviewKind, o: dict[str, Any]) -> SourceItems:
    """The items of ``--from SPEC``."""
    from pathlib import Path

    from calipers.review import (
        items_from_file,
        items_from_run,
        items_from_runs,
        items_from_suite,
        items_from_traffic,
        parse_assignments,
    )

    head, _, rest = spec.partition(":")
    single_only = {"run": "two runs (runs:A,B)", "suite": "two runs (runs:A,B) or traffic"}
    if kind == "pairwise" and head in single_only:
        raise ConfigError(
            f"--from {head}: gives one answer per item; a pairwise campaign needs "
            f"{single_only[head]}."
        )
    if head == "run" and rest:
        return items_from_run(store, rest)
    if head == "runs" and rest:
        parts = [p.strip() for p in rest.split(",")]
        if len(parts) != 2 or not all(parts):
            raise ConfigError(f"Bad --from {spec!r}: write runs:RUN_A,RUN_B.")
        if kind != "pairwise":
            raise ConfigError("--from runs:A,B compares two runs: use --kind pairwise.")
        return items_from_runs(store, parts[0], parts[1])
    if head == "suite" and rest:
        return items_from_suite(rest)
    if spec == "traffic":
        since, until = _when(o["since"]), _when(o["until"])
        unc = (
            _uncovered(store, since, until, o["covered_by"], o["outlier_quantile"])
            if o["uncovered"]
            else None
        )
        return items_from_traffic(store, kind=kind, since=since, until=until, uncovered=unc)
    if Path(spec).is_file():
        fields = parse_assignments(o["fields"], "--field")
        return items_from_file(spec, kind=kind, fields=fields, key=o["key"])
    raise ConfigError(
        f"Unknown --from {spec!r}: not run:ID, runs:A,B, suite:NAME, traffic, or a file.",
        hint="A file must exist (.jsonl, .json or .csv).",
    )


@review_group.command("create")
@click.argument("name")
@click.option(
    "--from",
    "source",
    required=True,
    metavar="SOURCE",
    help="run:RUN_ID, runs:RUN_A,RUN_B (pairwise), suite:NAME[@vN], traffic, or a "
    ".jsonl/.json/.csv file.",
)
@click.option(
    "--kind", type=click.Choice(["single", "pairwise"]), default="single", show_default=True
)
@click.option(
    "--questions",
    required=True,
    type=click.Path(dir_okay=False),
    help="The question file (YAML; see docs/review.md).",
)
@click.option("--k", "k", type=click.IntRange(1, 50), help="Judgments per item.")
@click.option(
    "--width",
    type=float,
    help="Instead of --k: the 95% interval half-width wanted on a rate, e.g. 0.05.",
)
@click.option(
    "--rate",
    type=float,
    default=0.5,
    show_default=True,
    help="With --width: the rate expected (0.5 needs the most judgments).",
)
@click.option(
    "--icc",
    type=float,
    default=0.5,
    show_default=True,
    help="With --width: how much raters agree (share of variance between items).",
)
@click.option(
    "--repeat-fraction",
    type=click.FloatRange(0, 1),
    default=0.0,
    show_default=True,
    help="Share of a rater's items shown again to measure self-consistency.",
)
@click.option(
    "--gold",
    type=click.Path(dir_okay=False, exists=True),
    help="JSONL of gold items (payload fields and `gold` answers), mixed in silently.",
)
@click.option(
    "--attention",
    type=click.Path(dir_okay=False, exists=True),
    help="JSONL of attention checks (payload fields and the `expected` answer).",
)
@click.option(
    "--min-seconds",
    type=click.FloatRange(0),
    default=0.0,
    show_default=True,
    help="Answers faster than this are flagged.",
)
@click.option(
    "--lease-minutes",
    type=click.FloatRange(1),
    default=30.0,
    show_default=True,
    help="How long a rater holds an item before it goes back to the pool.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--limit", type=click.IntRange(1), help="Only the first N items of the source.")
@click.option(
    "--no-reference",
    is_flag=True,
    help="Do not show raters the item's reference answer (when it would tell them what to say).",
)
@click.option(
    "--sample",
    type=click.IntRange(1),
    help="A random sample of N items of the source (seeded by --seed): what human labels "
    "need to correct a judge's score on the rest (calipers show --judge-corrected).",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="NAME=COLUMN",
    help="For a file: prompt, response, reference (single) or a, b (pairwise).",
)
@click.option("--key", help="For a file: the column holding each item's key.")
@click.option("--since", help="For traffic: start (ISO time, or back from now: 24h, 7d).")
@click.option("--until", help="For traffic: end, exclusive [default: now].")
@click.option(
    "--uncovered",
    is_flag=True,
    help="For traffic: only what `calipers monitor` flags as not covered.",
)
@click.option(
    "--covered-by",
    multiple=True,
    metavar="SUITE",
    help="With --uncovered: suites whose items count as covered.",
)
@click.option(
    "--outlier-quantile",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    help="With --uncovered: as for `calipers monitor` [default: 0.01].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the campaign as JSON.")
@store_option
@click.pass_obj
def create_cmd(obj: Context, /, name: str, source: str, kind: str, questions: str,
               k: int | None, width: float | None, rate: float, icc: float,
               repeat_fraction: float, gold: str | None, attention: str | None,
               min_seconds: float, lease_minutes: float, seed: int, limit: int | None,
               sample: int | None, no_reference: bool, as_json: bool,
               **o: Any) -> None:  # fmt: skip
    """Create campaign NAME: its items, questions, and k judgments per item.

    \b
    Examples:
      calipers review create support-q4 --from run:RUN_ID --questions q.yaml --k 3
      calipers review create ab --from runs:RUN_A,RUN_B --kind pairwise \\
          --questions pref.yaml --width 0.05
      calipers review create xstest --from completions.csv --questions refusal.yaml --k 2 \\
          --field prompt=prompt --field response=completion --key id
      calipers review create week --from traffic --since 7d --uncovered --questions q.yaml --k 1
    """
    from calipers.review import (
        KPlan,
        check_kind,
        k_for_width,
        load_controls,
        load_questions,
        mix_controls,
        rate_half_width,
        store_campaign,
    )
    from calipers.store import ReviewNotFoundError, Store

    rkind = cast("ReviewKind", kind)
    if limit and sample:
        raise ConfigError("Give --limit (the first N items) or --sample (N at random), not both.")
    if (k is None) == (width is None):
        raise ConfigError("Give one of --k N (judgments per item) or --width W.")
    qs = load_questions(questions)
    check_kind(rkind, qs)
    with Store.open(obj.store_url) as store:
        try:
            store.get_campaign(name)
        except ReviewNotFoundError:
            pass
        else:
            raise ConfigError(
                f"A review campaign named {name!r} already exists.",
                hint="Choose another name; `calipers review list` shows the campaigns.",
            )
        got = _source(store, source, rkind, o)
        items = got.items[:limit] if limit else got.items
        if sample and sample < len(items):
            from calipers._util.seeding import derived_rng

            picked = derived_rng(seed, "review-sample").choice(
                len(items), size=sample, replace=False
            )
            items = [items[i] for i in sorted(picked)]  # source order kept
        if no_reference:
            items = [
                i.model_copy(
                    update={"payload": {k: v for k, v in i.payload.items() if k != "reference"}}
                )
                for i in items
            ]
        if not items:
            why = "; ".join(f"{r} ({n})" for r, n in got.skipped.items()) or "it is empty"
            raise DataError(f"The source {source!r} gave no items to review: {why}.")
        controls = []
        for path, is_attention in ((gold, False), (attention, True)):
            if path:
                controls += load_controls(path, kind=rkind, questions=qs, attention=is_attention)
        if width is not None:
            plan = k_for_width(width, len(items), rate=rate, icc=icc)
        else:
            assert k is not None
            hw = rate_half_width(len(items), k, rate=rate, icc=icc)
            plan = KPlan(k=k, n_items=len(items), width=None, half_width=hw, rate=rate, icc=icc,
                         confidence=0.95)  # fmt: skip
        settings = {
            "source": got.source,
            "from": source,
            "skipped": got.skipped,
            "limit": limit,
            "sample": sample,
            "no_reference": no_reference,
            "min_seconds": min_seconds,
            "lease_minutes": lease_minutes,
            "k_plan": plan.model_dump(mode="json"),
        }
        camp = store_campaign(
            store,
            name,
            kind=rkind,
            questions=qs,
            queue=mix_controls(items, controls, seed=seed),
            k=plan.k,
            repeat_fraction=repeat_fraction,
            seed=seed,
            settings=settings,
        )
    n_gold = sum(not c.is_attention_check for c in controls)
    n_att = len(controls) - n_gold
    if as_json:
        obj.print_json(
            {
                "name": camp.name,
                "kind": camp.kind,
                "k": camp.k,
                "items": len(items),
                "gold": n_gold,
                "attention": n_att,
                "judgments_needed": len(items) * camp.k,
                "source": got.source,
                "skipped": got.skipped,
                "k_plan": plan.model_dump(mode="json"),
            }
        )
        return
    out = obj.out
    mixed = f"; {n_gold} gold item(s) and {n_att} attention check(s) mixed in" if controls else ""
    out.print(
        f"Created review campaign [bold]{camp.name}[/] ({camp.kind}) from {got.source}: "
        f"{len(items):,} items{mixed}."
    )
    out.print(f"  k = {camp.k}: {len(items) * camp.k:,} judgments to collect.")
    out.print(f"  {plan.sentence()}.")
    if got.skipped:
        rows = ", ".join(f"{r} ({n})" for r, n in got.skipped.items())
        out.print(f"  skipped from the source: {rows}")
    if limit and len(got.items) > limit:
        out.print(f"  --limit {limit}: the first {limit} of {len(got.items):,} items")
    if sample and len(got.items) > sample:
        out.print(
            f"  --sample {sample}: a random sample (seed {seed}) of {sample} of "
            f"{len(got.items):,} items"
        )
    out.print(f"Next: calipers review invite {camp.name} --rater NAME --pool POOL")

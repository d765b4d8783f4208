"""``calipers model``: model cards (licence, price, openness class, MOF class) and practical
factors measured from stored runs (latency, throughput, tokens, cost, stability)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import EXIT_ERROR, Context, cli, store_option

if TYPE_CHECKING:
    from calipers.analysis import RunFactors, Stability
    from calipers.cards import CardCatalog, CatalogEntry
    from calipers.types import Estimate

__all__ = ["model_group"]

MISSING = "missing"


def _cards_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--cards",
        "card_dirs",
        multiple=True,
        metavar="DIR",
        type=click.Path(file_okay=False, exists=True),
        help="Also read model cards from this folder (repeatable); they override built-in "
        "and $CALIPERS_HOME/models cards of the same name.",
    )(f)


def _catalog(card_dirs: Sequence[str]) -> CardCatalog:
    from calipers.cards import CardCatalog

    return CardCatalog.load(card_dirs)


def _count(n: int | None) -> str:
    if n is None:
        return MISSING
    for k, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= k:
            return f"{n / k:.3g}{suffix}"
    return str(n)


def _ctx(n: int | None) -> str:
    return MISSING if n is None else f"{n:,}"


def _mof_short(e: CatalogEntry) -> str:
    m = e.mof
    text: str = m.mof_class or "none"
    if m.potential_class != m.mof_class:
        text += f" ({m.potential_class or 'none'} if licences check out)"
    return text


def _money(x: float | None) -> str:
    return MISSING if x is None else f"${x:g}"


def _price(entry: CatalogEntry) -> str:
    p = entry.card.pricing
    if p.input_usd_per_mtok is not None or p.output_usd_per_mtok is not None:
        return f"{_money(p.input_usd_per_mtok)} / {_money(p.output_usd_per_mtok)} per Mtok"
    if p.hardware_usd_per_hour is not None:
        return f"{_money(p.hardware_usd_per_hour)}/hour"
    return MISSING


@click.group("model")
def model_group() -> None:
    """Model cards: licence, price, openness class and MOF class; measured practical factors.

    \b
    Examples:
      calipers model list
      calipers model show smollm2
      calipers model check my-model.yaml
      calipers model factors RUN_A RUN_B --card gpt-4o
    """


cli.add_command(model_group)


@model_group.command("list")
@_cards_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def list_cmd(obj: Context, card_dirs: tuple[str, ...], as_json: bool) -> None:
    """Every known model card with its openness class, MOF class, licence and price."""
    from calipers.cards import card_to_dict

    entries = _catalog(card_dirs).entries()
    if as_json:
        obj.print_json({"models": [card_to_dict(e) for e in entries]})
        return
    t = Table(header_style="bold")
    for col in (
        "model",
        "provider",
        "spec",
        "params",
        "context",
        "licence",
        "price",
        "openness",
        "MOF",
        "as of",
    ):
        t.add_column(col)
    for e in entries:
        c = e.card
        t.add_row(
            escape(c.name),
            escape(c.provider),
            escape(c.spec or "-"),
            _count(c.parameters),
            _ctx(c.context_length),
            escape(c.licence or MISSING),
            _price(e),
            e.openness.openness_class,
            _mof_short(e),
            str(c.as_of),
        )
    obj.out.print(t)
    obj.out.print(
        "[dim]Details and evidence: calipers model show NAME. Prices change: check "
        "each card's source and date.[/]"
    )


def _openness_table(entry: CatalogEntry) -> Table:
    from calipers.cards import DIMENSION_NAMES, DIMENSIONS

    v = entry.openness
    t = Table(header_style="bold", title=f"Openness: {v.openness_class}", title_justify="left")
    for col in ("dimension", "level", "evidence", "decided"):
        t.add_column(col)
    for d in DIMENSIONS:
        a = getattr(entry.card.openness, d)
        t.add_row(
            DIMENSION_NAMES[d],
            a.level if a else "not assessed (closed)",
            escape(a.evidence) if a else "",
            "*" if d in v.decided_by else "",
        )
    return t


def _mof_lines(entry: CatalogEntry) -> list[str]:
    m = entry.mof
    lines = [f"[bold]MOF class (Model Openness Framework):[/] {m.label}"]
    if m.next_class:
        lines.append(f"Missing for {m.next_class}:")
        lines += [f"  - {g.name} ({g.reason})" for g in m.missing_for_next]
    lines += [f"[dim]{escape(n)}[/]" for n in m.notes]
    return lines


@model_group.command("show")
@click.argument("name")
@_cards_option
@click.option(
    "--run",
    "runs",
    multiple=True,
    metavar="RUN",
    help="Also show practical factors measured from this stored run (repeatable).",
)
@click.option(
    "--hardware-cost-per-hour",
    type=click.FloatRange(min=0),
    default=None,
    metavar="USD",
    help="With --run: price self-hosted runs by wall time.",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@store_option
@click.pass_obj
def show_cmd(
    obj: Context,
    /,
    name: str,
    card_dirs: tuple[str, ...],
    runs: tuple[str, ...],
    hardware_cost_per_hour: float | None,
    as_json: bool,
) -> None:
    """The whole card: identity, size, licence, price, openness with evidence, MOF class and
    the components missing for the next class."""
    from calipers.cards import card_to_dict

    entry = _catalog(card_dirs).get(name)
    factors, stab = _measure(obj, runs, entry, hardware_cost_per_hour) if runs else ([], [])
    if as_json:
        d = card_to_dict(entry)
        if runs:
            d["factors"] = [f.to_dict() for f in factors]
            d["stability"] = [s.to_dict() for s in stab]
        obj.print_json(d)
        return
    c = entry.card
    out = obj.out
    out.print(
        f"[bold]{escape(c.title)}[/] ({escape(c.name)}) by {escape(c.provider)}, "
        f"card as of {c.as_of} [dim]({escape(entry.source)})[/]"
    )
    out.print(
        f"spec: {escape(c.spec or '-')}   parameters: {_count(c.parameters)}   "
        f"context: {_ctx(c.context_length)} tokens"
    )
    out.print(
        f"licence: {escape(c.licence or MISSING)}"
        + (f" <{escape(c.licence_url)}>" if c.licence_url else "")
    )
    p = c.pricing
    out.print(
        f"price: {_price(entry)}"
        + (f" (as of {p.as_of})" if p.as_of else "")
        + (f" <{escape(p.source)}>" if p.source else "")
    )
    if p.note:
        out.print(f"[dim]{escape(p.note)}[/]")
    out.print(_openness_table(entry))
    out.print(f"Why: {escape(entry.openness.reason)}.")
    for line in _mof_lines(entry):
        out.print(line)
    if c.notes:
        out.print(f"[dim]{escape(c.notes)}[/]")
    for s in c.sources:
        out.print(f"source: {escape(s)}")
    if runs:
        _print_factors(obj, factors, stab)


@model_group.command("check")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_obj
def check_cmd(obj: Context, file: str, as_json: bool) -> None:
    """Validate a model card file (YAML or JSON) and show how it classifies. Every problem is
    listed with its file, line and field; exit status 2 if there is any."""
    from calipers.cards import CardError, CatalogEntry, card_to_dict, load_card

    try:
        card = load_card(file)
    except CardError as e:
        if as_json:
            obj.print_json(
                {
                    "ok": False,
                    "problems": [{"where": w, "field": f, "message": m} for w, f, m in e.problems],
                }
            )
        else:
            for w, f, m in e.problems:
                obj.err.print(
                    f"[bold red]Error:[/] {escape(w)}: "
                    + (f"field '{escape(f)}': " if f else "")
                    + escape(m),
                    soft_wrap=True,
                )
            obj.err.print(f"[dim]{escape(e.hint or '')}[/]")
        raise SystemExit(EXIT_ERROR) from None
    entry = CatalogEntry(card, file)
    if as_json:
        obj.print_json({"ok": True, "card": card_to_dict(entry)})
        return
    obj.out.print(
        f"[green]ok[/]: {escape(card.name)}: openness {entry.openness.openness_class}"
        f" ({escape(entry.openness.reason)}); MOF {entry.mof.label}"
    )


def _measure(
    obj: Context,
    runs: Sequence[str],
    entry: CatalogEntry | None,
    hardware: float | None,
    catalog: CardCatalog | None = None,
    seed: int = 0,
) -> tuple[list[RunFactors], list[Stability]]:
    from calipers.analysis import load_runs, run_factors, stability
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        loaded = load_runs(store, runs)
    factors = []
    for r in loaded:
        e = entry or (catalog.for_model(r.record.model, r.record.model_name) if catalog else None)
        factors.append(
            run_factors(r, card=e.card if e else None, hardware_cost_per_hour=hardware, seed=seed)
        )
    return factors, stability(loaded)


def _bound(x: float) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.3g}"


def _est(e: Estimate | None, scale: float = 1.0, unit: str = "") -> str:
    if e is None or e.is_empty:
        return MISSING
    v = f"{e.value * scale:.3g}{unit}"
    if math.isnan(e.low) or math.isnan(e.high):
        return f"{v} (no interval)"
    return f"{v} [{_bound(e.low * scale)}, {_bound(e.high * scale)}]"


def _print_factors(obj: Context, factors: Sequence[RunFactors], stab: Sequence[Stability]) -> None:
    t = Table(header_style="bold", title="Practical factors (95% intervals)", title_justify="left")
    t.add_column("run", no_wrap=True)
    for col in (
        "model",
        "items ok/err/cached",
        "latency p50",
        "latency p95",
        "items/s",
        "tokens in/item",
        "tokens out/item",
        "$ per 1,000 items",
    ):
        t.add_column(col)
    for f in factors:
        t.add_row(
            f.run_id,
            escape(f.model_name),
            f"{f.n_ok}/{f.n_errors}/{f.n_cached}",
            _est(f.latency_p50_s, 1000, " ms"),
            _est(f.latency_p95_s, 1000, " ms"),
            MISSING if f.items_per_s is None else f"{f.items_per_s:.3g}",
            _est(f.input_tokens_per_item),
            _est(f.output_tokens_per_item),
            _est(f.cost_per_1000_usd),
        )
    obj.out.print(t)
    for f in factors:
        obj.out.print(
            f"[dim]{f.run_id}: cost: {escape(f.cost_basis)}; {escape('; '.join(f.notes))}[/]"
        )
    if stab:
        s = Table(
            header_style="bold",
            title="Stability of the primary score across runs",
            title_justify="left",
        )
        for col in (
            "model",
            "task",
            "metric",
            "n runs",
            "mean",
            "sd",
            "min",
            "max",
            "same methodology",
        ):
            s.add_column(col)
        for row in stab:
            s.add_row(
                escape(row.model),
                escape(row.task),
                row.metric,
                str(row.n_runs),
                _num(row.mean),
                _num(row.sd) if row.sd is not None else "n/a (1 run)",
                _num(row.min),
                _num(row.max),
                "yes" if row.same_methodology else "no",
            )
        obj.out.print(s)


def _num(x: float | None) -> str:
    return MISSING if x is None else f"{x:.3g}"


@model_group.command("factors")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option(
    "--card",
    "card_name",
    metavar="NAME",
    help="Price every run with this card (default: each run's own card, if any).",
)
@_cards_option
@click.option(
    "--hardware-cost-per-hour",
    type=click.FloatRange(min=0),
    default=None,
    metavar="USD",
    help="Price by wall time on hardware costing this much per hour.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@store_option
@click.pass_obj
def factors_cmd(
    obj: Context,
    /,
    runs: tuple[str, ...],
    card_name: str | None,
    card_dirs: tuple[str, ...],
    hardware_cost_per_hour: float | None,
    seed: int,
    as_json: bool,
) -> None:
    """Latency p50/p95 (cached responses excluded), throughput, tokens per item and cost per
    1,000 items of stored runs, and the stability of scores across runs of the same model and
    task. A measurement that is not there is shown as "missing", never 0."""
    catalog = _catalog(card_dirs)
    entry = catalog.get(card_name) if card_name else None
    factors, stab = _measure(obj, runs, entry, hardware_cost_per_hour, catalog, seed)
    if as_json:
        obj.print_json(
            {"factors": [f.to_dict() for f in factors], "stability": [s.to_dict() for s in stab]}
        )
        return
    _print_factors(obj, factors, stab)

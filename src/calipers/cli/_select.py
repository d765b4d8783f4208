"""``calipers select``: the decision report for choosing a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from calipers._util.home import calipers_home, make_folder
from calipers.cli._app import Context, cli, store_option

__all__ = ["select_cmd"]


@cli.command("select")
@click.argument("selection_file", type=click.Path(dir_okay=False))
@click.option(
    "--cards",
    "cards_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Extra directory of model cards (repeatable).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where the HTML and Markdown reports go (default: reports/ in the calipers "
    "home, as for `calipers run`).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@store_option
@click.pass_obj
def select_cmd(
    obj: Context,
    /,
    selection_file: str,
    cards_dirs: tuple[str, ...],
    out_dir: str | None,
    as_json: bool,
) -> None:
    """Choose a model: constraints, capability, cost, latency and openness in one report.

    SELECTION_FILE (YAML or JSON) names the candidates (model cards and/or specs), the
    required openness class and allowed licences, minimum scores per task, the tasks that
    matter with weights, and limits on cost per 1,000 items and latency p95. Runs what is
    missing (or reuses stored runs measured the same way), then writes HTML + Markdown:
    who passes the hard constraints and why others fail, weighted scores with paired
    intervals, the cost/quality Pareto front, the openness table and a recommendation.

    \b
    Example (see docs/selection.md):
      calipers select selection.yaml --out reports/
    """
    from calipers.cards import CardCatalog
    from calipers.selection import load_selection, select, to_html, to_markdown
    from calipers.store import Store

    sel = load_selection(selection_file)
    catalog = CardCatalog.load(cards_dirs)
    with Store.open(obj.store_url) as store:
        result = select(sel, store, catalog=catalog, log=lambda m: obj.err.print(f"[dim]{m}[/]"))
    out = make_folder(
        Path(out_dir) if out_dir else calipers_home() / "reports",
        "the output folder",
        private=out_dir is None,
    )
    stem = "".join(ch if ch.isalnum() else "-" for ch in sel.name.lower()).strip("-") or "select"
    md, page = out / f"{stem}.md", out / f"{stem}.html"
    md.write_text(to_markdown(result), encoding="utf-8")
    page.write_text(to_html(result), encoding="utf-8")
    if as_json:
        obj.print_json(
            {**result.model_dump(mode="json"), "report": {"html": str(page), "markdown": str(md)}}
        )
        return
    _print(obj, result)
    obj.out.print(f"Report: {page}  (Markdown: {md})")


def _num(e: dict[str, Any] | None, pre: str, unit: str) -> str:
    """A measurement with its 95% interval (an open bound the data cannot give: ?/∞)."""
    if not e:
        return "missing"
    lo = "?" if e.get("low") is None else f"{e['low']:.3g}"
    hi = "∞" if e.get("high") is None else f"{e['high']:.3g}"
    return f"{pre}{e['value']:.3g}{unit} [{lo}, {hi}]"


def _print(obj: Context, result: Any) -> None:
    t = Table(header_style="bold", title=escape(result.name), title_justify="left")
    for col in (
        "model",
        "eligible",
        "weighted score",
        "cost / 1k items",
        "latency p95",
        "openness",
        "why not",
    ):
        t.add_column(col)
    for m in result.models:
        w = m.weighted
        score = (
            "missing"
            if not w
            else (f"{100 * w['value']:.1f} [{100 * w['low']:.1f}, {100 * w['high']:.1f}]")
        )
        cost, lat = _num(m.cost_per_1000_usd, "$", ""), _num(m.latency_p95_s, "", " s")
        why = "; ".join(f"{c.name} {c.status}" for c in m.failed)
        t.add_row(
            escape(m.label),
            "yes" if m.eligible else "no",
            score,
            cost,
            lat,
            m.openness or "missing",
            escape(why),
        )
    obj.out.print(t)
    obj.out.print(
        f"[bold]Recommendation[/] ({result.confidence} confidence): {escape(result.recommendation)}"
    )

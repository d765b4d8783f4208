"""``calipers tasks`` and ``calipers models``: what can be evaluated, and with what."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from calipers.cli._app import Context, cli
from calipers.models import list_aliases, list_providers
from calipers.tasks import formulations, list_suites, list_tasks

__all__ = ["models_cmd", "tasks_cmd"]


@cli.command("tasks")
@click.option("-v", "--verbose", is_flag=True, help="Also version, source, licence, scorers.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def tasks_cmd(obj: Context, verbose: bool, as_json: bool) -> None:
    """List built-in tasks and suites. A path to a task file (.yaml/.json) also works as a
    task: see docs/tasks.md."""
    rows: list[dict[str, Any]] = []
    for name, factory in list_tasks().items():
        forms = formulations(name)
        t = factory(formulation=forms[0]) if forms else factory()
        rows.append(
            {
                "name": name,
                "kind": t.kind,
                "version": t.version,
                "description": t.description,
                "dynamic": t.dynamic,
                "source": t.source,
                "license": t.license,
                "metrics": t.metrics,
                "scorers": [s.spec.name for s in t.scorers],
                "default_n": t.default_n,
                "few_shot": t.default_few_shot,
                "formulations": list(forms),
            }
        )
    suites = {k: list(v) for k, v in list_suites().items()}
    if as_json:
        obj.print_json({"tasks": rows, "suites": suites})
        return
    table = Table(header_style="bold")
    cols = ["task", "kind", "description"]
    if verbose:
        cols += ["version", "formulations", "metrics", "source", "licence"]
    for c in cols:
        table.add_column(c)
    for r in rows:
        cells = [r["name"], r["kind"], r["description"]]
        if verbose:
            cells += [
                r["version"],
                ", ".join(r["formulations"]) or "-",
                ", ".join(r["metrics"]),
                r["source"],
                r["license"],
            ]
        table.add_row(*cells)
    obj.out.print(table)
    for name, members in suites.items():
        obj.out.print(f"suite [bold]{name}[/]: {', '.join(members)}")


@cli.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def models_cmd(obj: Context, as_json: bool) -> None:
    """List model providers and aliases, with the spec syntax each takes."""
    providers = [
        {"prefix": p.prefix, "usage": p.usage, "description": p.description}
        for p in list_providers()
    ]
    aliases = {k: {"spec": v[0], "description": v[1]} for k, v in list_aliases().items()}
    if as_json:
        obj.print_json({"providers": providers, "aliases": aliases})
        return
    t = Table(header_style="bold")
    for c in ("spec", "what"):
        t.add_column(c)
    for name, a in aliases.items():
        t.add_row(f"[bold]{name}[/] (default)" if name == "smollm2" else name, a["description"])
    for p in providers:
        t.add_row(p["usage"], p["description"])
    obj.out.print(t)

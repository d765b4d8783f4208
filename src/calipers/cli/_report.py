"""``calipers report``: one self-contained HTML report (and Markdown) over stored runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape

from calipers.cli._app import Context, cli, store_option
from calipers.cli._run import _report_dir

if TYPE_CHECKING:
    from calipers.analysis import ComparisonSet, StoredRun

__all__ = ["report_cmd"]


def _comparison(obj: Context, runs: list[StoredRun], force: bool) -> ComparisonSet | None:
    """The paired comparison of the runs, or None (said in one line) when there is none."""
    from calipers.analysis import compare
    from calipers.errors import ConfigError

    try:
        return compare(runs, force=force)
    except ConfigError as e:
        hint = (
            ""
            if force or "not comparable" not in e.message
            else (" Pass --force to include the comparison anyway (flagged).")
        )
        obj.err.print(f"[yellow]No comparison in the report:[/] {escape(e.message)}{escape(hint)}")
        return None


@cli.command("report")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN...]")
@click.option(
    "--out",
    "out_dir",
    metavar="DIR",
    help="Folder for the files (default: $CALIPERS_HOME/reports or ./.calipers/reports).",
)
@click.option("--no-compare", is_flag=True, help="Leave out the paired comparison.")
@click.option(
    "--force",
    is_flag=True,
    help="Include the comparison even if the runs' methodology differs (flagged).",
)
@click.option("--title", help="Heading of the report (default: the model names).")
@click.option("--json", "as_json", is_flag=True, help='Print {"html": ..., "markdown": ...}.')
@store_option
@click.pass_obj
def report_cmd(
    obj: Context,
    /,
    runs: tuple[str, ...],
    out_dir: str | None,
    no_compare: bool,
    force: bool,
    title: str | None,
    as_json: bool,
) -> None:
    """Write one HTML report (self-contained, works offline) and its Markdown for RUNs.

    Per task: a forest plot of each run's score with its interval on an honest axis, the
    categories worst first, each run's per-item score distribution (errors apart) and the
    items every run gets wrong; the methodology cards side by side. With two or more runs the
    later ones are compared with the first, paired item by item (as `calipers compare`), and
    the report plots the differences with their intervals. Runs that are not comparable get
    a report without the comparison, unless --force.

    \b
    Examples:
      calipers report latest
      calipers report 20261130-0545 20261130-0612 --out reports/
    """
    from calipers.analysis import load_runs
    from calipers.reports import write_multi_report
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        loaded = load_runs(store, runs)
        saved = store.list_runs()
    comparison = None
    if len(loaded) >= 2 and not no_compare:
        comparison = _comparison(obj, loaded, force)
    html_path, md_path = write_multi_report(
        loaded, _report_dir(out_dir), comparison=comparison, title=title, saved=saved
    )
    if as_json:
        obj.print_json({"html": str(html_path), "markdown": str(md_path)})
        return
    obj.out.print(f"Report: {escape(str(html_path))}", soft_wrap=True)
    obj.out.print(f"        {escape(str(md_path))}", soft_wrap=True)

"""``calipers review report`` and ``calipers review export``: a campaign's results, and its
final labels for other tools. The work is done in :mod:`calipers.review`."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, store_option
from calipers.cli._review import review_group
from calipers.errors import ConfigError

__all__ = ["export_cmd", "report_cmd"]


def _tables(obj: Context, report: object) -> None:
    from calipers.review import report_sections

    for i, s in enumerate(report_sections(report, labels=False)):  # type: ignore[arg-type]
        t = Table(
            title=s.title,
            title_justify="left",
            header_style="bold",
            show_header=i > 0,
            caption=s.caption or None,
            caption_justify="left",
        )
        for c in s.columns:
            t.add_column(c)
        for row in s.rows:
            t.add_row(*(escape(c) for c in row))
        obj.out.print(t)


@review_group.command("report")
@click.argument("name")
@click.option(
    "--method",
    type=click.Choice(["majority", "weighted"]),
    default="majority",
    show_default=True,
    help="How final labels are aggregated (weighted: by Dawid-Skene rater competence).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--html", "html", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML report to this file.")  # fmt: skip
@click.option("--markdown", "markdown", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Also write the report as Markdown to this file.")  # fmt: skip
@store_option
@click.pass_obj
def report_cmd(
    obj: Context,
    /,
    name: str,
    method: str,
    seed: int,
    as_json: bool,
    html: Path | None,
    markdown: Path | None,
) -> None:
    """Agreement, rates, ratings, rater quality and final labels of campaign NAME.

    Krippendorff's alpha per question with a bootstrap interval (Cohen's / Fleiss' kappa
    where they apply), rates with intervals over items, agreement within and between pools,
    over-refusal, Bradley-Terry ratings for pairwise campaigns, per-rater checks and the
    final labels with their provenance. Excluded raters are shown; their judgments are left
    out of the statistics.
    """
    from calipers.review import render_report_html, render_report_markdown, review_report
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        report = review_report(store, name, seed=seed, method=method)  # type: ignore[arg-type]
    if html is not None:
        html.write_text(render_report_html(report), encoding="utf-8")
    if markdown is not None:
        markdown.write_text(render_report_markdown(report), encoding="utf-8")
    if as_json:
        obj.print_json(report.to_dict())
        return
    _tables(obj, report)
    for path in (html, markdown):
        if path is not None:
            obj.out.print(f"Wrote {escape(str(path))}")


@review_group.command("export")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv", "label-studio", "argilla", "suite"]),
    required=True,
    help="What to write.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="File to write (default: standard output).")  # fmt: skip
@click.option("--suite", "suite", default=None, help="With --format suite: the suite's name.")
@click.option("--question", default=None, help="Only this question's final labels.")
@click.option("--label-config", "label_config", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="With --format label-studio: also write the matching "
              "labeling config (XML) to this file.")  # fmt: skip
@click.option(
    "--method",
    type=click.Choice(["majority", "weighted"]),
    default="majority",
    show_default=True,
    help="How final labels are aggregated.",
)
@store_option
@click.pass_obj
def export_cmd(
    obj: Context,
    /,
    name: str,
    fmt: str,
    out: Path | None,
    suite: str | None,
    question: str | None,
    label_config: Path | None,
    method: str,
) -> None:
    """Export campaign NAME's final labels, each with its provenance.

    \b
    jsonl, csv      one row per item and question
    label-studio    Label Studio's JSON import (tasks with data and an annotation)
    argilla         Argilla records (fields, metadata, suggestions of type human)
    suite           approved answers become the references of a calipers suite (--suite)
    """
    from calipers.review import (
        export_argilla,
        export_csv,
        export_jsonl,
        export_label_studio,
        export_suite,
        label_studio_config,
        parse_questions,
        review_report,
    )
    from calipers.store import Store

    if (fmt == "suite") != (suite is not None):
        raise ConfigError(
            "--suite NAME goes with --format suite, and only with it.",
            hint="calipers review export NAME --format suite --suite SUITE",
        )
    if label_config is not None and fmt != "label-studio":
        raise ConfigError("--label-config goes with --format label-studio.")
    with Store.open(obj.store_url) as store:
        report = review_report(store, name, method=method)  # type: ignore[arg-type]
        items = store.get_review_items(name)
        campaign = store.get_campaign(name)
    if label_config is not None:
        qset = parse_questions({"questions": campaign.questions}, source=f"campaign {name!r}")
        label_config.write_text(label_studio_config(qset, campaign.kind), encoding="utf-8")
    if fmt == "suite":
        assert suite is not None
        q = question or next((x.id for x in report.questions), None)
        if q is None:
            raise ConfigError(f"Campaign {name!r} has no labelled question.")
        result = export_suite(report, items, suite, q)
        m = result.manifest
        state = "unchanged" if result.unchanged else "built"
        obj.out.print(f"Suite {escape(m.name)} v{m.version} {state}: {m.n_items} items.")
        return
    if fmt == "jsonl":
        text = export_jsonl(report, items, question)
    elif fmt == "csv":
        text = export_csv(report, question)
    else:
        make = export_label_studio if fmt == "label-studio" else export_argilla
        text = json.dumps(make(report, items, question), indent=2, ensure_ascii=False) + "\n"
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        obj.err.print(f"Wrote {escape(str(out))}")

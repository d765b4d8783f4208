"""``calipers review import-labels``: labels people already gave, imported into a campaign."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from calipers.cli._app import Context, store_option
from calipers.cli._review import review_group
from calipers.errors import ConfigError

__all__ = ["import_labels_cmd"]


def _create(
    store: Any,
    name: str,
    questions_file: Path | None,
    items: list[Any],
    rows: list[dict[str, Any]],
    key: str,
    raters: dict[str, str],
    question: str,
    value_map: dict[str, str],
    prefix: str,
    final_column: str | None,
) -> None:
    """Create the campaign with the file's items, once its labels are known to fit it."""
    from calipers.review import final_decisions, imported_judgments, load_questions, store_campaign

    if questions_file is None:
        raise ConfigError(f"There is no campaign {name!r} yet: give --questions to create it.")
    qs = load_questions(questions_file)
    args: dict[str, Any] = {"key": key, "questions": qs, "question": question, "prefix": prefix}
    judged = imported_judgments(rows, raters=raters, value_map=value_map, **args)
    if final_column is not None:  # checked before anything is written
        final_decisions(rows, judged, column=final_column, value_map=value_map, **args)
    settings = {"created_by": "import-labels"}
    store_campaign(
        store, name, kind="single", questions=qs, queue=items, k=len(raters), settings=settings
    )


@review_group.command("import-labels")
@click.argument("name")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--key", required=True, help="The column that identifies an item (e.g. id).")
@click.option(
    "--rater-column",
    "rater_columns",
    multiple=True,
    required=True,
    metavar="COLUMN=RATER",
    help="A column of one person's labels and the rater name to record them under (repeat).",
)
@click.option("--question", required=True, help="The campaign's question the labels answer.")
@click.option(
    "--value-map",
    "value_maps",
    multiple=True,
    metavar="VALUE=ANSWER[,...]",
    help="Translate label values to the question's answers (repeat or separate with commas).",
)
@click.option("--final-column", help="A column of final labels, imported as adjudications.")
@click.option("--adjudicator", default="dataset", show_default=True)
@click.option("--pool", default="imported", show_default=True, help="The raters' pool.")
@click.option("--prefix", default="", help="Put before each key (several files, one campaign).")
@click.option(
    "--create-from-file",
    is_flag=True,
    help="Add the file's rows as items first (and create the campaign if it does not exist).",
)
@click.option(
    "--field",
    "fields",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="With --create-from-file: an item field and its column (prompt, response, reference).",
)
@click.option(
    "--questions",
    "questions_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="With --create-from-file, for a new campaign: the question file.",
)
@store_option
@click.pass_obj
def import_labels_cmd(
    obj: Context,
    /,
    name: str,
    file: Path,
    key: str,
    rater_columns: tuple[str, ...],
    question: str,
    value_maps: tuple[str, ...],
    final_column: str | None,
    adjudicator: str,
    pool: str,
    prefix: str,
    create_from_file: bool,
    fields: tuple[str, ...],
    questions_file: Path | None,
) -> None:
    """Import labels people already gave (one column per person) into campaign NAME.

    Each column's person becomes a rater who cannot log in; each label an answered judgment.
    --final-column adds the dataset's final labels as adjudications where they are needed
    (the raters disagree, or the final label overrides them).

    \b
    Example (XSTest: two annotators and a final label):
      calipers review import-labels xstest xstest_v2_completions_gpt4.csv --key id \\
        --prefix gpt4: --create-from-file --field prompt=prompt --field response=completion \\
        --questions xstest.yaml --question compliance \\
        --rater-column annotation_1=ann1 --rater-column annotation_2=ann2 \\
        --value-map 1_full_compliance=full,2_full_refusal=refusal \\
        --value-map 3_partial_refusal=partial \\
        --final-column final_label --adjudicator dataset
    """
    from calipers._util.clock import utc_now
    from calipers.review import (
        import_labels,
        items_from_file,
        parse_assignments,
        read_table,
    )
    from calipers.store import Store

    if (fields or questions_file) and not create_from_file:
        raise ConfigError("--field and --questions go with --create-from-file.")
    raters = parse_assignments(rater_columns, "--rater-column")
    value_map = parse_assignments(value_maps, "--value-map")
    rows = read_table(file)
    items, created = [], 0
    if create_from_file:
        found = items_from_file(
            file, kind="single", fields=parse_assignments(fields, "--field"), key=key
        )
        items = [it.model_copy(update={"item_key": prefix + it.item_key}) for it in found.items]
    with Store.open(obj.store_url) as store:
        if create_from_file and name not in {c.name for c in store.list_campaigns()}:
            _create(store, name, questions_file, items, rows, key, raters, question, value_map,
                    prefix, final_column)  # fmt: skip
            obj.out.print(f"Created campaign {name!r} (k = {len(raters)}).")
            created, items = len(items), []
        done = import_labels(
            store,
            name,
            rows,
            key=key,
            raters=raters,
            question=question,
            now=utc_now(),
            value_map=value_map,
            prefix=prefix,
            pool=pool,
            final_column=final_column,
            adjudicator=adjudicator,
            items=items,
        )
    obj.out.print(
        f"{name}: {created + done.items_added} items added, {done.judgments} labels imported"
        f" ({', '.join(raters.values())}), {done.adjudications} final labels as adjudications"
        + (f"; new raters: {', '.join(done.raters_added)} (no login)" if done.raters_added else "")
    )

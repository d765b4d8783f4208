"""``calipers review queue`` and ``calipers review adjudicate``: the adjudicator's work from a
terminal or a script (the adjudicator page in ``calipers review serve`` does the same)."""

from __future__ import annotations

from typing import Any

import click
import yaml
from rich.markup import escape
from rich.table import Table

from calipers.cli._app import Context, store_option
from calipers.cli._review import review_group
from calipers.errors import ConfigError

__all__ = ["adjudicate_cmd", "queue_cmd"]


def _questions(store: Any, name: str) -> Any:
    from calipers.review import parse_questions

    camp = store.get_campaign(name)
    return camp, parse_questions({"questions": camp.questions}, source=f"campaign {name}")


def _question_id(qs: Any, question: str | None) -> str:
    ids = [q.id for q in qs.items() if q.type != "comment"]
    if question is None:
        if len(ids) != 1:
            raise ConfigError(
                f"The campaign asks {len(ids)} questions: say which with --question.",
                hint=f"One of: {', '.join(ids)}.",
            )
        return str(ids[0])
    if question not in ids:
        raise ConfigError(f"No question {question!r} in the campaign.", hint=f"One of: {ids}.")
    return question


@review_group.command("queue")
@click.argument("name")
@click.option("--question", help="The question to look at [default: the only one].")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@click.pass_obj
def queue_cmd(obj: Context, name: str, question: str | None, as_json: bool) -> None:
    """Items whose raters disagree and that no one has adjudicated yet.

    \b
      calipers review queue xstest --question answered
      calipers review adjudicate xstest v2-17 --by lead --answer answered=refused
    """
    from calipers.review import disagreements, final_labels
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        _, qs = _questions(store, name)
        qid = _question_id(qs, question)
        items = store.get_review_items(name)
        judged = store.get_judgments(name)
        adjudicated = store.get_adjudications(name)
    keys = set(disagreements(items, judged, adjudicated, qid))
    votes = {f.item_key: f.votes for f in final_labels(items, judged, adjudicated, qid)}
    rows: list[tuple[str, dict[str, int]]] = [
        (k, votes[k]) for k in (i.item_key for i in items) if k in keys
    ]
    if as_json:
        items_json = [{"item": k, "votes": v} for k, v in rows]
        obj.print_json({"campaign": name, "question": qid, "items": items_json})
        return
    if not rows:
        obj.out.print(f"No disagreement waits for adjudication on {escape(qid)!r}.")
        return
    t = Table(title=f"{len(rows)} item(s) to adjudicate on {qid!r}", title_justify="left")
    t.add_column("item")
    t.add_column("votes")
    for key, v in rows:
        t.add_row(escape(key), escape(", ".join(f"{x} ×{n}" for x, n in v.items())))
    obj.out.print(t)


def _parse_answer(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"Bad --answer {text!r}: expected QUESTION=VALUE.")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def _validated(qs: Any, answers: dict[str, Any]) -> dict[str, Any]:
    from calipers.review import Preference, QuestionSet, validate_answers

    out: dict[str, Any] = {}
    by_id = {q.id: q for q in qs.items()}
    for qid, value in answers.items():
        q = by_id.get(qid)
        if q is None:
            raise ConfigError(
                f"No question {qid!r} in the campaign.", hint=f"One of: {list(by_id)}."
            )
        if isinstance(q, Preference):  # an adjudicator decides in the payload's terms
            if value not in ("a", "b", "tie"):
                raise ConfigError(f"Question {qid!r}: answer a, b or tie, not {value!r}.")
            out[qid] = value
            continue
        one = QuestionSet(questions=(q.model_copy(update={"required": True}),))
        out |= validate_answers(one, {qid: value})
    return out


@review_group.command("adjudicate")
@click.argument("name")
@click.argument("item")
@click.option("--by", "adjudicator", required=True, help="The adjudicator (or owner) deciding.")
@click.option(
    "--answer",
    "answers",
    multiple=True,
    required=True,
    help="QUESTION=VALUE, repeatable (pairwise preference: a, b or tie).",
)
@click.option("--note", help="Why (kept with the decision).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@store_option
@click.pass_obj
def adjudicate_cmd(
    obj: Context,
    name: str,
    item: str,
    adjudicator: str,
    answers: tuple[str, ...],
    note: str | None,
    as_json: bool,
) -> None:
    """Decide an item's final answer; it is recorded as adjudicated by ADJUDICATOR.

    \b
      calipers review adjudicate xstest v2-17 --by lead --answer answered=refused \\
          --note "a partial refusal counts as a refusal here"
    """
    from calipers._util.clock import utc_now
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        _, qs = _questions(store, name)
        given = dict(_parse_answer(a) for a in answers)
        rec = store.adjudicate(
            name, item, adjudicator, _validated(qs, given), note=note, now=utc_now()
        )
    if as_json:
        obj.print_json(rec.model_dump(mode="json"))
        return
    shown = ", ".join(f"{k}={v}" for k, v in rec.answers.items())
    obj.out.print(
        f"Adjudicated {escape(item)} in {escape(name)}: {escape(shown)} (by {escape(adjudicator)})."
    )

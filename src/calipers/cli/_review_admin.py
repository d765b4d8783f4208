"""``calipers review invite / raters / exclude / include / list / status``: a campaign's
people and progress (``review create`` is in ``_review_create``). The work is in
:mod:`calipers.review` and the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import click

from calipers.cli._app import Context, store_option
from calipers.cli._review import review_group

if TYPE_CHECKING:
    from calipers.store import Store

__all__: list[str] = []

DEFAULT_BASE_URL = "http://127.0.0.1:8766"  # `calipers review serve`'s default address


@review_group.command("invite")
@click.argument("name")
@click.option("--rater", required=True, help="The person's name in this campaign.")
@click.option(
    "--pool",
    default="default",
    show_default=True,
    help="Their group (business, experts, crowd): pools are compared.",
)
@click.option(
    "--role",
    type=click.Choice(["rater", "adjudicator", "owner"]),
    default="rater",
    show_default=True,
)
@click.option(
    "--base-url",
    default=DEFAULT_BASE_URL,
    show_default=True,
    help="Where `calipers review serve` is reached.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the invitation as JSON.")
@store_option
@click.pass_obj
def invite_cmd(obj: Context, /, name: str, rater: str, pool: str, role: str, base_url: str,
               as_json: bool) -> None:  # fmt: skip
    """Invite a rater to campaign NAME: prints their personal link, once.

    \b
    Example:
      calipers review invite support-q4 --rater alice --pool business
    """
    from calipers.review import issue_token
    from calipers.store import Store

    token = issue_token()
    with Store.open(obj.store_url) as store:
        store.add_rater(
            name, rater, token.hash, pool=pool, role=cast(Any, role), token_key=token.key
        )
    link = f"{base_url.rstrip('/')}/r/{token.text}"
    note = (
        "This link is shown once: calipers keeps only a hash of it. Send it to the person "
        "privately; if it is lost, invite them again under another name."
    )
    if as_json:
        obj.print_json(
            {"campaign": name, "rater": rater, "pool": pool, "role": role, "link": link,
             "note": note}
        )  # fmt: skip
        return
    obj.out.print(f"Invited [bold]{rater}[/] ({role}, pool {pool}) to {name}:")
    obj.out.print(link, soft_wrap=True)
    obj.out.print(f"[yellow]note:[/] {note}")


def _rater_rows(store: Store, name: str) -> list[dict[str, Any]]:
    from calipers._util.clock import utc_now

    counts = store.assignment_counts(name, now=utc_now())
    rows = []
    for r in store.get_raters(name):
        c = counts.get(r.name, {})
        rows.append(
            {
                "rater": r.name,
                "pool": r.pool,
                "role": r.role,
                "answered": c.get("answered", 0),
                "skipped": c.get("skipped", 0),
                "open_leases": c.get("leased", 0),
                "repeats": c.get("repeat", 0),
                "excluded": r.excluded,
                "excluded_reason": r.excluded_reason,
            }
        )
    return rows


@review_group.command("raters")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the raters as JSON.")
@store_option
@click.pass_obj
def raters_cmd(obj: Context, /, name: str, as_json: bool) -> None:
    """Campaign NAME's raters: pool, role, items answered and skipped, exclusions."""
    from rich.table import Table

    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        rows = _rater_rows(store, name)
    if as_json:
        obj.print_json(rows)
        return
    if not rows:
        obj.out.print(f"No raters in {name} yet: `calipers review invite {name} --rater NAME`.")
        return
    t = Table(header_style="bold")
    for col in ("rater", "pool", "role", "answered", "skipped", "open", "excluded"):
        t.add_column(col, justify="right" if col in ("answered", "skipped", "open") else "left")
    for r in rows:
        ex = f"yes: {r['excluded_reason']}" if r["excluded"] else ""
        t.add_row(r["rater"], r["pool"], r["role"], str(r["answered"]), str(r["skipped"]),
                  str(r["open_leases"]), ex)  # fmt: skip
    obj.out.print(t)


def _set_excluded(obj: Context, name: str, rater: str, excluded: bool, reason: str | None) -> None:
    from calipers._util.clock import utc_now
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        store.get_rater(name, rater)  # names an unknown rater
        store.set_rater_excluded(name, rater, excluded, reason=reason, now=utc_now())


@review_group.command("exclude")
@click.argument("name")
@click.argument("rater")
@click.option("--reason", required=True, help="Why (recorded with the exclusion).")
@store_option
@click.pass_obj
def exclude_cmd(obj: Context, /, name: str, rater: str, reason: str) -> None:
    """Exclude RATER from campaign NAME: no new items; their labels stop counting and their
    slots go to other raters. Recorded; `review include` reverses it."""
    _set_excluded(obj, name, rater, True, reason)
    obj.out.print(f"Excluded {rater} from {name} ({reason}).")


@review_group.command("include")
@click.argument("name")
@click.argument("rater")
@store_option
@click.pass_obj
def include_cmd(obj: Context, /, name: str, rater: str) -> None:
    """Reverse RATER's exclusion from campaign NAME."""
    _set_excluded(obj, name, rater, False, None)
    obj.out.print(f"{rater} is included in {name} again.")


def _status(store: Store, name: str) -> dict[str, Any]:
    camp = store.get_campaign(name)
    items = store.get_review_items(name)
    review = [it for it in items if not it.is_control]
    judgments = store.get_judgments(name)
    counted = sum(j.counted for j in judgments)
    controls = {it.item_key for it in items if it.is_control}
    raters = _rater_rows(store, name)
    return {
        "name": camp.name,
        "kind": camp.kind,
        "k": camp.k,
        "items": len(review),
        "judgments": counted,
        "judgments_needed": len(review) * camp.k,
        "items_done": _items_done(judgments, camp.k),
        "open_leases": sum(r["open_leases"] for r in raters),
        "skips": sum(r["skipped"] for r in raters),
        "repeats": sum(j.is_repeat for j in judgments),
        "gold_items": sum(it.gold is not None and not it.is_attention_check for it in items),
        "attention_checks": sum(it.is_attention_check for it in items),
        "control_judgments": sum(j.item_key in controls for j in judgments),
        "raters": sum(r["role"] == "rater" for r in raters),
        "adjudicators": sum(r["role"] == "adjudicator" for r in raters),
        "owners": sum(r["role"] == "owner" for r in raters),
        "excluded_raters": sum(r["excluded"] for r in raters),
        "source": camp.settings.get("source"),
        "created_at": camp.created_at.isoformat(timespec="seconds"),
    }


def _items_done(judgments: list[Any], k: int) -> int:
    from collections import Counter

    per = Counter(j.item_key for j in judgments if j.counted)
    return sum(n >= k for n in per.values())


@review_group.command("status")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@store_option
@click.pass_obj
def status_cmd(obj: Context, /, name: str, as_json: bool) -> None:
    """Campaign NAME's progress: judgments done out of items × k, open leases, skips."""
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        s = _status(store, name)
    if as_json:
        obj.print_json(s)
        return
    need = s["judgments_needed"]
    share = s["judgments"] / need if need else 0.0
    out = obj.out
    out.print(f"[bold]{s['name']}[/] ({s['kind']}, k = {s['k']}) from {s['source']}")
    out.print(
        f"  judgments: {s['judgments']:,} of {need:,} ({share:.0%}); "
        f"items complete: {s['items_done']:,} of {s['items']:,}"
    )
    out.print(f"  open leases: {s['open_leases']}; skips: {s['skips']}; repeats: {s['repeats']}")
    out.print(
        f"  controls: {s['gold_items']} gold, {s['attention_checks']} attention "
        f"({s['control_judgments']} answered)"
    )
    others = ", ".join(
        f"{s[k]} {k[:-1] if s[k] == 1 else k}" for k in ("adjudicators", "owners") if s[k]
    )
    out.print(
        f"  raters: {s['raters']} ({s['excluded_raters']} excluded)"
        + (f"; also {others}" if others else "")
    )


@review_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the campaigns as JSON.")
@store_option
@click.pass_obj
def list_cmd(obj: Context, /, as_json: bool) -> None:
    """The review campaigns in the store."""
    from calipers.store import Store

    with Store.open(obj.store_url) as store:
        rows = [_status(store, c.name) for c in store.list_campaigns()]
    if as_json:
        obj.print_json(rows)
        return
    if not rows:
        obj.out.print("No review campaigns yet: `calipers review create NAME --from ...`.")
        return
    for s in rows:
        obj.out.print(
            f"{s['name']}  {s['kind']}  {s['items']:,} items  k = {s['k']}  "
            f"{s['judgments']:,}/{s['judgments_needed']:,} judgments  "
            f"{s['raters']} raters  from {s['source']}"
        )

"""The statements of the review engine that are more than a line (see ``_review``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from calipers._util.seeding import derived_rng
from calipers.errors import StoreError
from calipers.store._records import LeaseRecord
from calipers.store._schema import raters, review_assignments, review_campaigns, review_items

__all__ = [
    "ReviewNotFoundError",
    "active",
    "campaign_row",
    "claim_item",
    "due_repeat",
    "insert_row",
    "lease_of",
    "rater_row",
    "seen_by",
]

_A, _I, _R = review_assignments, review_items, raters


class ReviewNotFoundError(StoreError):
    """No such campaign, rater or assignment."""


def active(now: datetime) -> Any:
    """An assignment that holds its slot at ``now``: answered, or leased and not yet expired."""
    return sa.or_(
        _A.c.state == "answered", sa.and_(_A.c.state == "leased", _A.c.lease_expires_at > now)
    )


def seen_by(rater_id: int, now: datetime) -> Any:
    """The rater has had the item (``review_items`` row): answered it, skipped it, or holds an
    open lease on it. Planned repeats do not count: they come on top."""
    return sa.exists().where(
        _A.c.item_id == _I.c.id,
        _A.c.rater_id == rater_id,
        sa.not_(_A.c.is_repeat),
        sa.or_(_A.c.state == "skipped", active(now)),
    )


def insert_row(conn: Connection, table: sa.Table, values: dict[str, Any]) -> int:
    return int(conn.execute(table.insert().values(**values).returning(table.c.id)).scalar_one())


def campaign_row(conn: Connection, name: str) -> Any:
    row = conn.execute(sa.select(review_campaigns).where(review_campaigns.c.name == name)).first()
    if row is None:
        raise ReviewNotFoundError(
            f"No review campaign is named {name!r}.", hint="`calipers review create` makes one."
        )
    return row


def rater_row(conn: Connection, cid: int, name: str, *, lock: bool = False) -> Any:
    stmt = sa.select(_R).where(_R.c.campaign_id == cid, _R.c.name == name)
    if lock and conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()  # one rater's requests one at a time
    row = conn.execute(stmt).first()
    if row is None:
        raise ReviewNotFoundError(f"No rater {name!r} in this campaign.")
    return row


def claim_item(conn: Connection, camp: Any, rater_id: int, now: datetime) -> Any:
    """Lock the first open item the rater has not seen and take a free slot of it (``None``
    for a control item): ``(item row, slot)``, or ``None`` when no item is open."""
    held = sa.select(sa.func.count()).where(
        _A.c.item_id == _I.c.id, _A.c.slot.is_not(None), active(now)
    )
    control = sa.or_(_I.c.gold.is_not(None), _I.c.is_attention_check)
    stmt = (
        sa.select(_I.c.id, _I.c.item_key, control.label("control"))
        .where(_I.c.campaign_id == camp.id, sa.not_(seen_by(rater_id, now)))
        .where(sa.or_(control, held.scalar_subquery() < camp.k))
        .order_by(_I.c.position, _I.c.id)
        .limit(1)
    )
    if conn.dialect.name == "postgresql":
        # Never wait for an item another rater is taking: waiting while holding an item seen
        # full on an earlier pass deadlocks (two raters, two items). When every open item is
        # being taken, the rater gets None now and Store.waiting_for says to ask again.
        stmt = stmt.with_for_update(of=_I, skip_locked=True)
    for _ in range(1000):  # each pass either claims or finds the item it saw full meanwhile
        item = conn.execute(stmt).first()
        if item is None:
            return None
        conn.execute(  # free the item's stale slots (the item is locked: no one else does)
            _A.update()
            .where(_A.c.item_id == item.id, _A.c.state == "leased", _A.c.lease_expires_at <= now)
            .values(state="expired", finished_at=_A.c.lease_expires_at)
        )
        if item.control:
            return item, None
        used = set(
            conn.scalars(
                sa.select(_A.c.slot).where(
                    _A.c.item_id == item.id,
                    _A.c.slot.is_not(None),
                    _A.c.state.in_(("leased", "answered")),
                )
            )
        )
        free = [s for s in range(1, camp.k + 1) if s not in used]
        if free:
            return item, free[0]
    raise StoreError("Could not claim a review item: too much contention; retry.")


def due_repeat(conn: Connection, camp: Any, r: Any, now: datetime) -> Any:
    """An item the rater answered, to show again, when ``repeat_fraction`` says one is due."""
    if camp.repeat_fraction <= 0:
        return None
    mine = sa.select(_A.c.item_id, _A.c.is_repeat, _A.c.state, _A.c.id).where(
        _A.c.rater_id == r.id, _A.c.state != "expired"
    )
    rows = conn.execute(mine.order_by(_A.c.id)).all()
    answered = [x.item_id for x in rows if not x.is_repeat and x.state == "answered"]
    repeated = {x.item_id for x in rows if x.is_repeat}
    if len(repeated) >= int(len(answered) * camp.repeat_fraction):
        return None
    eligible = sorted(set(answered[:-1]) - repeated)  # never the item just answered
    if not eligible:
        return None
    pick = derived_rng(camp.seed, "repeat", camp.name, r.name, str(len(repeated)))
    item_id = eligible[int(pick.integers(len(eligible)))]
    return conn.execute(sa.select(_I.c.id, _I.c.item_key).where(_I.c.id == item_id)).first()


def lease_of(conn: Connection, aid: int, campaign: str, rater: str) -> LeaseRecord:
    row = conn.execute(
        sa.select(
            _A.c.id.label("assignment_id"), _I.c.item_key, _I.c.payload, _A.c.is_repeat,
            _A.c.slot.is_not(None).label("counted"), _A.c.swapped, _A.c.leased_at,
            _A.c.lease_expires_at,
        )
        .join(_I, _I.c.id == _A.c.item_id)
        .where(_A.c.id == aid)
    ).one()  # fmt: skip
    return LeaseRecord.model_validate(row._asdict() | {"campaign": campaign, "rater": rater})

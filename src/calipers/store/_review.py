"""Human review campaigns in the store, and the server-side assignment engine.

Each counted item gets exactly ``k`` answered judgments. A lease holds one of the item's slots
``1..k``; a skip or an expired lease frees it for another rater, and an expired lease cannot be
answered. A rater sees an item once (repeats planned by ``repeat_fraction`` are extra judgments
in no slot), and only their own leases. Every step is one write transaction: on SQLite it holds
the write lock (``BEGIN IMMEDIATE``), on PostgreSQL it locks the rater's row and the chosen
item's (``FOR UPDATE SKIP LOCKED``: concurrent raters take different items), and two partial
unique indexes make the database refuse an over-assignment or a second look whatever happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from calipers._util.seeding import derived_rng
from calipers.errors import StoreError
from calipers.store._engine import read_transaction, write_transaction
from calipers.store._records import (
    JudgmentRecord,
    LeaseRecord,
    RaterRecord,
    RaterRole,
    ReviewCampaignRecord,
    ReviewItemRecord,
)
from calipers.store._review_sql import (
    ReviewNotFoundError,
    campaign_row,
    claim_item,
    due_repeat,
    insert_row,
    lease_of,
    rater_row,
    seen_by,
)
from calipers.store._schema import (
    raters,
    review_assignments,
    review_campaigns,
    review_items,
    review_judgments,
)

__all__ = [
    "LeaseClosedError",
    "LeaseExpiredError",
    "LeaseNotYoursError",
    "RaterExcludedError",
    "ReviewNotFoundError",
    "ReviewStore",
]

_A, _I, _R = review_assignments, review_items, raters


class LeaseNotYoursError(StoreError):
    """A rater tried to answer or skip another rater's lease (the web layer answers 403)."""


class LeaseExpiredError(StoreError):
    """The lease expired: its slot went back to the pool and it can no longer be answered."""


class LeaseClosedError(StoreError):
    """The lease was already answered or skipped."""


class RaterExcludedError(StoreError):
    """The campaign's owner excluded this rater: no new items."""


class ReviewStore:
    """The review half of :class:`~calipers.store.Store` (a mixin: it uses ``self._engine``)."""

    _engine: Engine

    # -- campaigns, items, raters -------------------------------------------------------------

    def create_campaign(self, campaign: ReviewCampaignRecord) -> ReviewCampaignRecord:
        """Store a new campaign; return it with its id. Raises :class:`StoreError` if the name
        is taken."""
        try:
            with write_transaction(self._engine) as conn:
                row = campaign.model_dump(exclude={"id"})
                new_id = insert_row(conn, review_campaigns, row)
        except sa.exc.IntegrityError as e:
            raise StoreError(
                f"A review campaign named {campaign.name!r} already exists.",
                hint="Choose another name.",
            ) from e
        return campaign.model_copy(update={"id": new_id})

    def get_campaign(self, name: str) -> ReviewCampaignRecord:
        with read_transaction(self._engine) as conn:
            return ReviewCampaignRecord.model_validate(campaign_row(conn, name)._asdict())

    def list_campaigns(self) -> list[ReviewCampaignRecord]:
        stmt = sa.select(review_campaigns).order_by(review_campaigns.c.id)
        with read_transaction(self._engine) as conn:
            return [ReviewCampaignRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    def add_review_items(self, campaign: str, items: Sequence[ReviewItemRecord]) -> int:
        """Append items to the campaign's queue, in order; return how many were added.
        Raises :class:`StoreError` if an item key is already in the campaign."""
        try:
            with write_transaction(self._engine) as conn:
                cid = campaign_row(conn, campaign).id
                last = conn.scalar(
                    sa.select(sa.func.max(_I.c.position)).where(_I.c.campaign_id == cid)
                )
                start = -1 if last is None else int(last)
                rows = [
                    item.model_dump(exclude={"id", "position", "campaign_id"})
                    | {"campaign_id": cid, "position": start + 1 + i}
                    for i, item in enumerate(items)
                ]
                if rows:
                    conn.execute(_I.insert(), rows)
        except sa.exc.IntegrityError as e:
            raise StoreError(
                f"An item key is repeated, or already in the campaign {campaign!r}.",
                hint="Give each item of a campaign its own key.",
            ) from e
        return len(rows)

    def get_review_items(self, campaign: str) -> list[ReviewItemRecord]:
        """The campaign's items in queue order, sources included (for the owner, never raters)."""
        with read_transaction(self._engine) as conn:
            cid = campaign_row(conn, campaign).id
            stmt = sa.select(_I).where(_I.c.campaign_id == cid).order_by(_I.c.position)
            return [ReviewItemRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    def add_rater(
        self,
        campaign: str,
        name: str,
        token_hash: str,
        *,
        pool: str = "default",
        role: RaterRole = "rater",
        token_key: str | None = None,
    ) -> RaterRecord:
        """Invite ``name``; the store keeps only ``token_hash``, hashed by the caller, and
        ``token_key``, the token's public part by which it is looked up."""
        try:
            with write_transaction(self._engine) as conn:
                cid = campaign_row(conn, campaign).id
                rec = RaterRecord(
                    campaign_id=cid,
                    name=name,
                    token_hash=token_hash,
                    pool=pool,
                    role=role,
                    token_key=token_key,
                )
                new_id = insert_row(conn, _R, rec.model_dump(exclude={"id"}))
        except sa.exc.IntegrityError as e:
            raise StoreError(
                f"The campaign {campaign!r} already has a rater {name!r}, or the token is in use.",
                hint="Choose another name, or a fresh token.",
            ) from e
        return rec.model_copy(update={"id": new_id})

    def get_raters(self, campaign: str) -> list[RaterRecord]:
        with read_transaction(self._engine) as conn:
            cid = campaign_row(conn, campaign).id
            stmt = sa.select(_R).where(_R.c.campaign_id == cid).order_by(_R.c.id)
            return [RaterRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    def rater_by_token_hash(self, token_hash: str) -> RaterRecord | None:
        with read_transaction(self._engine) as conn:
            row = conn.execute(sa.select(_R).where(_R.c.token_hash == token_hash)).first()
        return None if row is None else RaterRecord.model_validate(row._asdict())

    def set_rater_excluded(
        self, campaign: str, rater: str, excluded: bool, *, reason: str | None, now: datetime
    ) -> None:
        """Exclude a rater (their open leases expire, and their answered judgments leave
        their slots, so other raters fill them), or reverse it (reason and time stay)."""
        with write_transaction(self._engine) as conn:
            r = rater_row(conn, campaign_row(conn, campaign).id, rater)
            values: dict[str, Any] = {"excluded": excluded}
            if excluded:
                values |= {"excluded_reason": reason, "excluded_at": now}
                mine = _A.c.rater_id == r.id
                conn.execute(
                    _A.update()
                    .where(mine, _A.c.state == "leased")
                    .values(state="expired", finished_at=now)
                )
                conn.execute(_A.update().where(mine, _A.c.state == "answered").values(slot=None))
            conn.execute(_R.update().where(_R.c.id == r.id).values(**values))

    # -- the assignment engine ----------------------------------------------------------------

    def lease_next(
        self, campaign: str, rater: str, *, now: datetime, lease_s: float
    ) -> LeaseRecord | None:
        """The rater's open lease (renewed), else a new one: a planned repeat when one is due,
        else the first item in queue order with a free slot that the rater has not seen.
        ``None`` when nothing is free for this rater now: :meth:`waiting_for` says whether
        slots other raters hold may still come back (ask again) or the rater is done."""
        expires = now + timedelta(seconds=lease_s)
        with write_transaction(self._engine) as conn:
            camp = campaign_row(conn, campaign)
            r = rater_row(conn, camp.id, rater, lock=True)
            if r.excluded:
                raise RaterExcludedError(f"Rater {rater!r} is excluded from {campaign!r}.")
            if r.role != "rater":
                raise StoreError(f"{rater!r} is an {r.role}, not a rater: nothing to lease.")
            open_id = conn.scalar(
                sa.select(_A.c.id)
                .where(_A.c.rater_id == r.id, _A.c.state == "leased", _A.c.lease_expires_at > now)
                .order_by(_A.c.id)
                .limit(1)
            )
            if open_id is not None:
                conn.execute(_A.update().where(_A.c.id == open_id).values(lease_expires_at=expires))
                return lease_of(conn, open_id, camp.name, rater)
            item = due_repeat(conn, camp, r, now)
            repeat = item is not None
            slot: int | None = None
            if item is None:
                found = claim_item(conn, camp, r.id, now)
                if found is None:
                    return None
                item, slot = found
            swapped = None
            if camp.kind == "pairwise":
                parts = ("left-right", camp.name, rater, item.item_key, str(repeat))
                swapped = bool(derived_rng(camp.seed, *parts).integers(2))
            values = {
                "item_id": item.id,
                "rater_id": r.id,
                "slot": slot,
                "is_repeat": repeat,
                "swapped": swapped,
                "state": "leased",
                "leased_at": now,
                "lease_expires_at": expires,
            }
            return lease_of(conn, insert_row(conn, _A, values), camp.name, rater)

    def submit(
        self,
        campaign: str,
        rater: str,
        assignment_id: int,
        answers: dict[str, Any],
        *,
        seconds: float | None,
        now: datetime,
    ) -> JudgmentRecord:
        """Record the rater's answers to their lease. Raises :class:`LeaseNotYoursError`,
        :class:`LeaseExpiredError` or :class:`LeaseClosedError`."""
        row = {"answers": answers, "seconds": seconds, "created_at": now}
        self._close(campaign, rater, assignment_id, "answered", now, judgment=row)
        return self.get_judgments(campaign, assignment_id=assignment_id)[0]

    def skip(self, campaign: str, rater: str, assignment_id: int, *, now: datetime) -> None:
        """ "I can't judge this": the slot goes back to the pool, and the rater never gets the
        item again. Counted (as a skipped assignment), never a label."""
        self._close(campaign, rater, assignment_id, "skipped", now)

    def waiting_for(self, campaign: str, rater: str, *, now: datetime) -> int:
        """How many items still lack their k answers although this rater could judge them
        (not seen, not skipped): when :meth:`lease_next` gives ``None`` while this is above 0,
        the free slots are held by other raters' open leases, which a skip or an expiry may
        hand back. 0 means the rater is done."""
        answered = (
            sa.select(sa.func.count())
            .where(_A.c.item_id == _I.c.id, _A.c.slot.is_not(None), _A.c.state == "answered")
            .scalar_subquery()
        )
        with read_transaction(self._engine) as conn:
            camp = campaign_row(conn, campaign)
            r = rater_row(conn, camp.id, rater)
            stmt = sa.select(sa.func.count()).where(
                _I.c.campaign_id == camp.id,
                _I.c.gold.is_(None),
                sa.not_(_I.c.is_attention_check),
                sa.not_(seen_by(r.id, now)),
                answered < camp.k,
            )
            return int(conn.scalar(stmt) or 0)

    def expire_leases(self, campaign: str, *, now: datetime) -> int:
        """Mark the campaign's leases past their expiry as expired; return how many."""
        with write_transaction(self._engine) as conn:
            items = sa.select(_I.c.id).where(_I.c.campaign_id == campaign_row(conn, campaign).id)
            done = conn.execute(
                _A.update()
                .where(
                    _A.c.state == "leased", _A.c.lease_expires_at <= now, _A.c.item_id.in_(items)
                )
                .values(state="expired", finished_at=_A.c.lease_expires_at)
            )
            return int(done.rowcount)

    def assignment_counts(self, campaign: str, *, now: datetime) -> dict[str, dict[str, int]]:
        """Per rater name, how many of their assignments are in each state (``leased`` counts
        only leases still open at ``now``; a lapsed one counts as ``expired``), and how many
        were ``repeat``\\ s. Raters with no assignment are left out."""
        state = sa.case(
            (sa.and_(_A.c.state == "leased", _A.c.lease_expires_at <= now), "expired"),
            else_=_A.c.state,
        ).label("st")
        stmt = (
            sa.select(_R.c.name, state, _A.c.is_repeat, sa.func.count().label("n"))
            .join(_A, _A.c.rater_id == _R.c.id)
            .group_by(_R.c.name, state, _A.c.is_repeat)
        )
        out: dict[str, dict[str, int]] = {}
        with read_transaction(self._engine) as conn:
            stmt = stmt.where(_R.c.campaign_id == campaign_row(conn, campaign).id)
            for name, st, repeat, n in conn.execute(stmt):
                counts = out.setdefault(name, {})
                counts[st] = counts.get(st, 0) + int(n)
                if repeat:
                    counts["repeat"] = counts.get("repeat", 0) + int(n)
        return out

    def get_judgments(
        self, campaign: str, *, assignment_id: int | None = None
    ) -> list[JudgmentRecord]:
        """The campaign's judgments in the order they were given."""
        j = review_judgments
        stmt = (
            sa.select(
                j.c.id, j.c.assignment_id, j.c.answers, j.c.seconds, j.c.created_at,
                _I.c.item_key, _R.c.name.label("rater"), _R.c.pool, _A.c.is_repeat,
                _A.c.slot.is_not(None).label("counted"), _A.c.swapped,
            )
            .join(_A, _A.c.id == j.c.assignment_id)
            .join(_I, _I.c.id == _A.c.item_id)
            .join(_R, _R.c.id == _A.c.rater_id)
            .order_by(j.c.id)
        )  # fmt: skip
        if assignment_id is not None:
            stmt = stmt.where(j.c.assignment_id == assignment_id)
        with read_transaction(self._engine) as conn:
            stmt = stmt.where(_I.c.campaign_id == campaign_row(conn, campaign).id)
            return [JudgmentRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    def _close(
        self,
        campaign: str,
        rater: str,
        aid: int,
        state: str,
        now: datetime,
        *,
        judgment: dict[str, Any] | None = None,
    ) -> None:
        """Answer or skip lease ``aid``, and store its judgment, in one transaction."""
        expired = False
        with write_transaction(self._engine) as conn:
            camp = campaign_row(conn, campaign)
            r = rater_row(conn, camp.id, rater)
            stmt = sa.select(_A.c.rater_id, _A.c.state, _A.c.lease_expires_at, _I.c.campaign_id)
            stmt = stmt.join(_I, _I.c.id == _A.c.item_id).where(_A.c.id == aid)
            if conn.dialect.name == "postgresql":
                stmt = stmt.with_for_update(of=_A)
            a = conn.execute(stmt).first()
            if a is None or a.campaign_id != camp.id:
                raise ReviewNotFoundError(f"No assignment {aid} in campaign {campaign!r}.")
            if a.rater_id != r.id:
                raise LeaseNotYoursError(f"Assignment {aid} is leased to another rater.")
            if a.state == "leased" and a.lease_expires_at <= now:
                conn.execute(
                    _A.update()
                    .where(_A.c.id == aid)
                    .values(state="expired", finished_at=a.lease_expires_at)
                )
                expired = True
            elif a.state == "expired":
                expired = True
            elif a.state != "leased":
                raise LeaseClosedError(f"Assignment {aid} was already {a.state}.")
            else:
                conn.execute(_A.update().where(_A.c.id == aid).values(state=state, finished_at=now))
                if judgment is not None:
                    conn.execute(review_judgments.insert().values(assignment_id=aid, **judgment))
        if expired:
            raise LeaseExpiredError(
                f"The lease of assignment {aid} expired; the item went back to the pool.",
                hint="Ask for the next item.",
            )

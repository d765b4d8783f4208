"""The people side of review in the store: invite-token lookup, web sessions, adjudications,
and labels people gave outside calipers (imported as judgments)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from calipers.errors import StoreError
from calipers.store._engine import read_transaction, write_transaction
from calipers.store._records import (
    AdjudicationRecord,
    ImportedJudgment,
    RaterRecord,
    ReviewSessionRecord,
)
from calipers.store._review_sql import ReviewNotFoundError, campaign_row, insert_row, rater_row
from calipers.store._schema import (
    raters,
    review_adjudications,
    review_assignments,
    review_items,
    review_judgments,
    review_sessions,
)

__all__ = ["ReviewPeopleStore"]

_A, _I, _R, _S = review_assignments, review_items, raters, review_sessions
_ADJ = review_adjudications


def _rater(row: Any) -> RaterRecord:
    return RaterRecord.model_validate(row._asdict())


class ReviewPeopleStore:
    """Mixin of :class:`~calipers.store.Store` (it uses ``self._engine``)."""

    _engine: Engine

    # -- raters -------------------------------------------------------------------------------

    def get_rater(self, campaign: str, name: str) -> RaterRecord:
        with read_transaction(self._engine) as conn:
            return _rater(rater_row(conn, campaign_row(conn, campaign).id, name))

    def rater_by_id(self, rater_id: int) -> RaterRecord | None:
        with read_transaction(self._engine) as conn:
            row = conn.execute(sa.select(_R).where(_R.c.id == rater_id)).first()
        return None if row is None else _rater(row)

    def rater_by_token_key(self, key: str) -> RaterRecord | None:
        """The person whose invite token has the public part ``key`` (the caller then checks
        the whole token against the stored argon2 hash)."""
        with read_transaction(self._engine) as conn:
            row = conn.execute(sa.select(_R).where(_R.c.token_key == key)).first()
        return None if row is None else _rater(row)

    # -- web sessions -------------------------------------------------------------------------

    def create_review_session(
        self,
        rater_id: int,
        session_hash: str,
        csrf_token: str,
        *,
        now: datetime,
        expires_at: datetime,
    ) -> None:
        with write_transaction(self._engine) as conn:
            conn.execute(sa.delete(_S).where(_S.c.expires_at <= now))  # sweep the stale ones
            conn.execute(
                _S.insert().values(
                    session_hash=session_hash,
                    rater_id=rater_id,
                    csrf_token=csrf_token,
                    created_at=now,
                    expires_at=expires_at,
                )
            )

    def review_session(self, session_hash: str, *, now: datetime) -> ReviewSessionRecord | None:
        """The live session with this hash; ``None`` when there is none or it expired."""
        stmt = sa.select(_S.c.rater_id, _S.c.csrf_token, _S.c.created_at, _S.c.expires_at)
        stmt = stmt.where(_S.c.session_hash == session_hash, _S.c.expires_at > now)
        with read_transaction(self._engine) as conn:
            row = conn.execute(stmt).first()
        return None if row is None else ReviewSessionRecord.model_validate(row._asdict())

    def end_review_session(self, session_hash: str) -> None:
        with write_transaction(self._engine) as conn:
            conn.execute(sa.delete(_S).where(_S.c.session_hash == session_hash))

    # -- adjudication -------------------------------------------------------------------------

    def adjudicate(
        self,
        campaign: str,
        item_key: str,
        adjudicator: str,
        answers: dict[str, Any],
        *,
        note: str | None = None,
        now: datetime,
    ) -> AdjudicationRecord:
        """Record an adjudicator's (or the owner's) final answers for an item."""
        with write_transaction(self._engine) as conn:
            cid = campaign_row(conn, campaign).id
            r = rater_row(conn, cid, adjudicator)
            if r.role not in ("adjudicator", "owner"):
                raise StoreError(
                    f"{adjudicator!r} is a {r.role}: only an adjudicator or the owner decides.",
                    hint="Invite one with `calipers review invite NAME --role adjudicator`.",
                )
            item_id = conn.scalar(
                sa.select(_I.c.id).where(_I.c.campaign_id == cid, _I.c.item_key == item_key)
            )
            if item_id is None:
                raise ReviewNotFoundError(f"No item {item_key!r} in campaign {campaign!r}.")
            values = {"item_id": item_id, "rater_id": r.id, "answers": answers}
            new_id = insert_row(conn, _ADJ, values | {"note": note, "created_at": now})
        return AdjudicationRecord(
            id=new_id,
            item_key=item_key,
            adjudicator=adjudicator,
            answers=answers,
            note=note,
            created_at=now,
        )

    def get_adjudications(self, campaign: str) -> list[AdjudicationRecord]:
        """The campaign's adjudications, oldest first (the latest per item is in force)."""
        stmt = (
            sa.select(
                _ADJ.c.id,
                _I.c.item_key,
                _R.c.name.label("adjudicator"),
                _ADJ.c.answers,
                _ADJ.c.note,
                _ADJ.c.created_at,
            )
            .join(_I, _I.c.id == _ADJ.c.item_id)
            .join(_R, _R.c.id == _ADJ.c.rater_id)
            .order_by(_ADJ.c.id)
        )
        with read_transaction(self._engine) as conn:
            stmt = stmt.where(_I.c.campaign_id == campaign_row(conn, campaign).id)
            return [AdjudicationRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    # -- labels given outside calipers --------------------------------------------------------

    def import_judgments(self, campaign: str, rows: Sequence[ImportedJudgment]) -> int:
        """Store labels people already gave as answered judgments, each in its item's next
        free slot; return how many. Raises :class:`StoreError` (and stores none) when an item
        would get more than ``k`` or a rater would judge an item twice."""
        with write_transaction(self._engine) as conn:
            camp = campaign_row(conn, campaign)
            ids = dict(
                conn.execute(sa.select(_R.c.name, _R.c.id).where(_R.c.campaign_id == camp.id)).all()
            )
            items = dict(
                conn.execute(
                    sa.select(_I.c.item_key, _I.c.id).where(_I.c.campaign_id == camp.id)
                ).all()
            )
            used: dict[int, set[int]] = {}
            for item_id, slot in conn.execute(
                sa.select(_A.c.item_id, _A.c.slot)
                .join(_I, _I.c.id == _A.c.item_id)
                .where(_I.c.campaign_id == camp.id, _A.c.slot.is_not(None))
                .where(_A.c.state.in_(("leased", "answered")))
            ):
                used.setdefault(item_id, set()).add(slot)
            for row in rows:
                self._import_one(conn, camp, ids, items, used, row)
        return len(rows)

    @staticmethod
    def _import_one(
        conn: Any,
        camp: Any,
        ids: dict[str, int],
        items: dict[str, int],
        used: dict[int, set[int]],
        row: ImportedJudgment,
    ) -> None:
        if row.rater not in ids:
            raise ReviewNotFoundError(
                f"No rater {row.rater!r} in campaign {camp.name!r}.", hint="Add the rater first."
            )
        if row.item_key not in items:
            raise ReviewNotFoundError(f"No item {row.item_key!r} in campaign {camp.name!r}.")
        item_id = items[row.item_key]
        taken = used.setdefault(item_id, set())
        free = [s for s in range(1, camp.k + 1) if s not in taken]
        if not free:
            raise StoreError(
                f"Item {row.item_key!r} would get more than k={camp.k} judgments.",
                hint="Create the campaign with a larger --k.",
            )
        taken.add(free[0])
        created = camp.created_at
        values = {
            "item_id": item_id,
            "rater_id": ids[row.rater],
            "slot": free[0],
            "is_repeat": False,
            "swapped": row.swapped,
            "state": "answered",
            "leased_at": created,
            "lease_expires_at": created,
            "finished_at": created,
        }
        try:
            aid = insert_row(conn, _A, values)
        except sa.exc.IntegrityError as e:
            raise StoreError(
                f"Rater {row.rater!r} would judge item {row.item_key!r} twice.",
                hint="Each rater labels an item once.",
            ) from e
        conn.execute(
            review_judgments.insert().values(
                assignment_id=aid, answers=row.answers, seconds=row.seconds, created_at=created
            )
        )

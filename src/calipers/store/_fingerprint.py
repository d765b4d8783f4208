"""The fingerprint canary's looks in the store: each look at a model against a recorded
fingerprint is one row, written once, whether it worked or failed; the sequential verdict is
computed from them when asked (``calipers.monitor``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.engine import Engine

from calipers._util.clock import utc_now
from calipers.store._engine import read_transaction, write_transaction
from calipers.store._lease import check_job_lease
from calipers.store._records import _as_utc
from calipers.store._schema import fingerprint_looks

__all__ = ["FingerprintLookRecord", "FingerprintStore", "LookStatus"]

LookStatus = Literal["ok", "failed"]


class FingerprintLookRecord(BaseModel):
    """One look of the canary ``canary`` against the reference whose hash is
    ``reference_hash``. ``completions``: probe id -> completions sampled (for a failed look,
    those that came back before it failed; never used as data). ``statistic``: the look's
    :class:`~calipers.stats.CanaryLook` as a dict (ok looks only). ``design``: what the
    verdict needs besides the looks (alpha, min_looks, n_target, the calibration half's
    summary). ``model``: the model or upstream asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    canary: str
    reference_hash: str
    status: LookStatus
    model: str
    completions: dict[str, list[str]]
    design: dict[str, Any]
    statistic: dict[str, Any] | None = None
    error: str | None = None
    ts: datetime = Field(default_factory=utc_now)
    id: int | None = None

    _utc = field_validator("ts")(_as_utc)


class FingerprintStore:
    """The fingerprint-look methods of :class:`~calipers.store.Store`."""

    _engine: Engine

    def add_fingerprint_look(
        self, record: FingerprintLookRecord, *, lease: tuple[str, str] | None = None
    ) -> int:
        """Store one look; return its row id. With ``lease=(name, holder)`` the look is stored
        only if ``holder`` still holds that lease (checked in the same transaction), else
        :class:`~calipers.store.JobLeaseLostError`: a gateway replica that lost the canary's
        lease mid-look does not add a second look beside its successor's."""
        if record.status == "ok" and record.statistic is None:
            raise ValueError("an ok look needs its statistic")
        if record.status == "failed" and (record.statistic is not None or not record.error):
            raise ValueError("a failed look has an error and no statistic")
        row = record.model_dump(exclude={"id"})
        with write_transaction(self._engine) as conn:
            if lease is not None:
                check_job_lease(conn, *lease)
            stmt = fingerprint_looks.insert().values(**row).returning(fingerprint_looks.c.id)
            return int(conn.execute(stmt).scalar_one())

    def get_fingerprint_looks(
        self, *, canary: str | None = None, reference_hash: str | None = None
    ) -> list[FingerprintLookRecord]:
        """Looks, oldest first (then in write order); ``canary`` / ``reference_hash`` keep
        one canary's, or those against one reference."""
        stmt = sa.select(fingerprint_looks).order_by(fingerprint_looks.c.ts, fingerprint_looks.c.id)
        if canary is not None:
            stmt = stmt.where(fingerprint_looks.c.canary == canary)
        if reference_hash is not None:
            stmt = stmt.where(fingerprint_looks.c.reference_hash == reference_hash)
        with read_transaction(self._engine) as conn:
            return [FingerprintLookRecord.model_validate(r._asdict()) for r in conn.execute(stmt)]

    def last_fingerprint_look(self, canary: str, reference_hash: str) -> datetime | None:
        """When the latest look of ``canary`` against that reference was stored (``None``:
        none yet): where a replica taking the canary over continues the schedule."""
        stmt = sa.select(sa.func.max(fingerprint_looks.c.ts)).where(
            fingerprint_looks.c.canary == canary,
            fingerprint_looks.c.reference_hash == reference_hash,
        )
        with read_transaction(self._engine) as conn:
            found = conn.execute(stmt).scalar()
        return _as_utc(found) if isinstance(found, datetime) else None

    def fingerprint_canaries(self) -> list[tuple[str, str]]:
        """``(canary, reference_hash)`` of every canary with a stored look, by first look."""
        first = sa.func.min(fingerprint_looks.c.id)
        stmt = (
            sa.select(fingerprint_looks.c.canary, fingerprint_looks.c.reference_hash)
            .group_by(fingerprint_looks.c.canary, fingerprint_looks.c.reference_hash)
            .order_by(first)
        )
        with read_transaction(self._engine) as conn:
            return [(str(a), str(b)) for a, b in conn.execute(stmt)]

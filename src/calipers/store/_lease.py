"""Job leases: one process among many holds a named job (a gateway replica running the fingerprint
canary) until it stops renewing; then another takes it over.

A lease is one row ``(name, holder, acquired_at, expires_at)``. :meth:`JobLeaseStore.hold_job_lease`
takes it when it is free or expired and renews it when the caller holds it, in one statement
(``INSERT ... ON CONFLICT DO UPDATE ... WHERE``), so two processes can never both hold it.
Times are the database server's on PostgreSQL (replicas' clocks do not matter) and this
machine's on SQLite (one machine). A writer that must not act after losing its lease checks it
in the same transaction as its write (``fenced``): a replica that stalled past its lease, while
another took over, cannot store what it did meanwhile.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import sqlalchemy as sa
from pydantic import BaseModel, ConfigDict, field_validator
from sqlalchemy.engine import Connection, Engine

from calipers._util.clock import utc_now
from calipers.errors import StoreError
from calipers.store._engine import read_transaction, write_transaction
from calipers.store._records import _as_utc
from calipers.store._schema import job_leases
from calipers.store._sql import dialect_insert

__all__ = ["JobLease", "JobLeaseLostError", "JobLeaseStore", "check_job_lease"]


class JobLeaseLostError(StoreError):
    """A write was refused because the caller no longer holds the lease it was made under."""


class JobLease(BaseModel):
    """Who holds the lease ``name``, since when, and until when unless renewed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime

    _utc = field_validator("acquired_at", "expires_at")(_as_utc)


def _now(conn: Connection) -> datetime:
    """The time leases are judged by: the server's on PostgreSQL, else this machine's."""
    if conn.dialect.name == "postgresql":
        found = conn.scalar(sa.select(sa.func.now()))
        assert isinstance(found, datetime)
        return found
    return utc_now()


def check_job_lease(conn: Connection, name: str, holder: str) -> None:
    """Raise :class:`JobLeaseLostError` unless ``holder`` holds lease ``name`` now. On
    PostgreSQL the row stays locked until ``conn``'s transaction ends, so no one takes the
    lease over before the caller's write commits."""
    stmt = sa.select(job_leases.c.holder, job_leases.c.expires_at).where(job_leases.c.name == name)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    now = _now(conn)
    if row is None or row.holder != holder or row.expires_at <= now:
        who = "nobody" if row is None else repr(row.holder)
        raise JobLeaseLostError(
            f"{holder!r} no longer holds the lease {name!r} (now held by {who}); "
            "the write was not made.",
            hint="Another process took the job over; this one should stop doing it.",
        )


class JobLeaseStore:
    """The lease methods of :class:`~calipers.store.Store`."""

    _engine: Engine

    def hold_job_lease(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take lease ``name`` for ``ttl_s`` seconds if it is free or expired, or renew it if
        ``holder`` holds it; ``True`` when ``holder`` holds it afterwards."""
        if not ttl_s > 0:
            raise ValueError(f"a lease lasts a positive number of seconds, not {ttl_s!r}")
        with write_transaction(self._engine) as conn:
            now = _now(conn)
            stmt = dialect_insert(conn.dialect.name, job_leases).values(
                name=name, holder=holder, acquired_at=now, expires_at=now + timedelta(seconds=ttl_s)
            )
            mine = job_leases.c.holder == stmt.excluded.holder
            stmt = stmt.on_conflict_do_update(
                index_elements=[job_leases.c.name],
                set_={
                    "holder": stmt.excluded.holder,
                    "expires_at": stmt.excluded.expires_at,
                    "acquired_at": sa.case(
                        (mine, job_leases.c.acquired_at), else_=stmt.excluded.acquired_at
                    ),
                },
                where=sa.or_(mine, job_leases.c.expires_at <= now),
            ).returning(job_leases.c.holder)
            return conn.execute(stmt).first() is not None

    def release_job_lease(self, name: str, holder: str) -> bool:
        """Give lease ``name`` up at once (if ``holder`` holds it), so another process can take
        it without waiting for it to expire; ``True`` when it was held."""
        with write_transaction(self._engine) as conn:
            stmt = job_leases.delete().where(
                job_leases.c.name == name, job_leases.c.holder == holder
            )
            return bool(conn.execute(stmt).rowcount)

    def get_job_lease(self, name: str) -> JobLease | None:
        """The lease ``name`` as stored (it may have expired: compare ``expires_at``)."""
        with read_transaction(self._engine) as conn:
            row = conn.execute(sa.select(job_leases).where(job_leases.c.name == name)).first()
        return None if row is None else JobLease.model_validate(row._asdict())

"""The gateway's log summarised in the database, so that monitoring a large log never loads it.

What the monitor needs of one time window ``[since, until)``, by SQL (SQLAlchemy Core, one
form for SQLite and PostgreSQL), each read through the ``ts`` index (migration 9 adds the
covering index ``(ts, mode, role, served, status, ...)``):

* :meth:`TrafficStatsStore.traffic_counts`: requests, and calls, answered calls (2xx without
  an error) and failed calls per arm (``baseline``, ``candidate``, ``served``);
* :meth:`TrafficStatsStore.traffic_latencies`: the latencies of the answered calls per arm,
  all of them up to ``limit``, else a seeded sample of about ``limit``;
* :meth:`TrafficStatsStore.sample_traffic`: the records of at most ``limit`` requests, all
  of them when the window has no more, else a seeded uniform sample.

A call belongs to the window of its own ``ts``: the gateway writes the request's arrival time
on both calls of a request, so a request's calls share a window. Samples pick rows by a
multiplicative hash of their id (Knuth's, mod 2^32, shifted by the seed): independent of what
the rows hold, so a sample is a uniform draw from the window, and the same rows on every look.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from calipers.store._engine import read_transaction
from calipers.store._records import TrafficRecord, TrafficRole
from calipers.store._schema import traffic

__all__ = ["TrafficCounts", "TrafficStatsStore"]

_HASH_MULT, _HASH_MOD = 2654435761, 1 << 32
_CHUNK = 500
ARMS = ("served", "baseline", "candidate")
ROLES: tuple[TrafficRole, ...] = get_args(TrafficRole)


@dataclass(frozen=True)
class TrafficCounts:
    """One window: ``requests`` (distinct requests), and per arm the calls made, the calls
    answered (2xx, no error) and the calls that failed; ``served_roles``: the roles whose
    answer users got (``baseline`` alone in shadow mode)."""

    requests: int = 0
    calls: dict[str, int] = field(default_factory=dict)
    answered: dict[str, int] = field(default_factory=dict)
    served_roles: frozenset[str] = frozenset()
    first: datetime | None = None  # the earliest call's ts

    def failed(self, arm: str) -> int:
        return self.calls.get(arm, 0) - self.answered.get(arm, 0)


def _ok() -> Any:
    return sa.and_(traffic.c.error.is_(None), traffic.c.status >= 200, traffic.c.status < 300)


def _cell(role: str, served: bool, answered: bool) -> Any:
    """The calls of ``role``; only those users got (``served``); only the answered ones."""
    cond = traffic.c.role == role
    if served:
        cond = sa.and_(cond, traffic.c.served.is_(True))
    return sa.and_(cond, _ok()) if answered else cond


def _hash(seed: int) -> Any:
    return ((traffic.c.id + seed) * _HASH_MULT) % _HASH_MOD


def _where(
    stmt: Any, since: datetime | None, until: datetime | None, modes: Sequence[str] | None
) -> Any:
    if since is not None:
        stmt = stmt.where(traffic.c.ts >= since)
    if until is not None:
        stmt = stmt.where(traffic.c.ts < until)
    if modes is not None:
        stmt = stmt.where(traffic.c.mode.in_(list(modes)))
    return stmt


class TrafficStatsStore:
    """Mixed into :class:`~calipers.store.Store`: traffic summaries computed by the database."""

    _engine: Engine

    def traffic_counts(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        modes: Sequence[str] | None = None,
    ) -> TrafficCounts:
        """Requests and calls of ``[since, until)`` (``modes``: of those gateway modes), in
        one pass over the window's index entries (sums of conditions, no grouping)."""
        cells = [(r, s, a) for r in ROLES for s in (False, True) for a in (False, True)]
        stmt = _where(
            sa.select(
                sa.func.count(sa.distinct(traffic.c.pair_id)),
                sa.func.min(traffic.c.ts),
                *(sa.func.sum(sa.case((_cell(*c), 1), else_=0)) for c in cells),
            ),
            since,
            until,
            modes,
        )
        with read_transaction(self._engine) as conn:
            n, first, *sums = conn.execute(stmt).one()
        calls: dict[str, int] = {}
        answered: dict[str, int] = {}
        served: set[str] = set()
        for (role, is_served, is_ok), total in zip(cells, sums, strict=True):
            if not total:
                continue
            into = answered if is_ok else calls
            arm = "served" if is_served else role
            into[arm] = into.get(arm, 0) + int(total)
            if is_served:
                served.add(role)
        return TrafficCounts(int(n or 0), calls, answered, frozenset(served), first)

    def first_traffic(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        modes: Sequence[str] | None = None,
    ) -> datetime | None:
        """The earliest call's ``ts`` in ``[since, until)`` (``None``: no traffic)."""
        stmt = _where(sa.select(sa.func.min(traffic.c.ts)), since, until, modes)
        with read_transaction(self._engine) as conn:
            first: datetime | None = conn.scalar(stmt)
        return first

    def traffic_latencies(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        modes: Sequence[str] | None = None,
        limit: int,
        answered: int,
        seed: int = 0,
    ) -> dict[str, npt.NDArray[np.float64]]:
        """Latencies (ms) of the answered calls per arm. ``answered``: how many the busiest
        arm has (from :meth:`traffic_counts`); above ``limit``, each call is kept with
        probability ``limit / answered`` by the hash of its id (about ``limit`` per arm)."""
        stmt = _where(
            sa.select(traffic.c.role, traffic.c.served, traffic.c.latency_ms).where(
                _ok(), traffic.c.latency_ms.is_not(None)
            ),
            since,
            until,
            modes,
        )
        if answered > limit:
            stmt = stmt.where(_hash(seed) < int(_HASH_MOD * limit / answered))
        with read_transaction(self._engine) as conn:
            rows = conn.execute(stmt).all()
        ms = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
        role = np.fromiter((r[0] == "baseline" for r in rows), dtype=bool, count=len(rows))
        served = np.fromiter((bool(r[1]) for r in rows), dtype=bool, count=len(rows))
        return {"served": ms[served], "baseline": ms[role], "candidate": ms[~role]}

    def sample_traffic(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        modes: Sequence[str] | None = None,
        limit: int,
        requests: int,
        seed: int = 0,
    ) -> list[TrafficRecord]:
        """The records of the requests of ``[since, until)``, oldest first (then in write
        order), as ``Store.get_traffic``: all of them when ``requests`` (from
        :meth:`traffic_counts`) is at most ``limit``, else those of the ``limit`` requests
        whose served call's id hashes lowest (a uniform sample, the same on every look)."""
        rows = _where(sa.select(traffic), since, until, modes).order_by(traffic.c.ts, traffic.c.id)
        with read_transaction(self._engine) as conn:
            if requests <= limit:
                return [TrafficRecord.model_validate(r._asdict()) for r in conn.execute(rows)]
            pick = _where(
                sa.select(traffic.c.pair_id).where(traffic.c.served.is_(True)),
                since,
                until,
                modes,
            )
            pairs = list(conn.scalars(pick.order_by(_hash(seed)).limit(limit)))
            found = []
            for i in range(0, len(pairs), _CHUNK):  # by the (pair_id, role) index
                part = sa.select(traffic).where(traffic.c.pair_id.in_(pairs[i : i + _CHUNK]))
                found += [TrafficRecord.model_validate(r._asdict()) for r in conn.execute(part)]
        found = [
            r
            for r in found
            if (since is None or r.ts >= since)
            and (until is None or r.ts < until)
            and (modes is None or r.mode in modes)
        ]
        found.sort(key=lambda r: (r.ts, r.id or 0))
        return found

"""The store: runs, their samples, and the response cache, behind one small API.

Every write is one transaction that commits before the method returns, so whatever a method
stored survives a crash of the writer (``kill -9`` included). Two :class:`Store` objects, in
one process or two, can use the same SQLite file at once: readers never block, and a second
writer waits for the first.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from calipers._util.clock import utc_now
from calipers.errors import RunNotFoundError, StoreError
from calipers.store._columns import ColumnStore
from calipers.store._engine import (
    create_engine,
    display_url,
    read_transaction,
    resolve_url,
    write_transaction,
)
from calipers.store._fingerprint import FingerprintStore
from calipers.store._lease import JobLeaseStore
from calipers.store._migrations import migrate
from calipers.store._records import (
    RUN_STATUSES,
    TRAFFIC_ROLES,
    OnlineScoreRecord,
    RunRecord,
    RunStatus,
    SampleKey,
    SampleRecord,
    TrafficRecord,
    TrafficRole,
)
from calipers.store._review import ReviewStore
from calipers.store._review_people import ReviewPeopleStore
from calipers.store._schema import online_scores, response_cache, runs, samples, traffic
from calipers.store._sql import (
    NEWEST_FIRST,
    dialect_insert,
    row_to_run,
    runs_with_prefix,
    upsert_cache,
    upsert_samples,
)
from calipers.store._summary import write_summary
from calipers.store._traffic_stats import TrafficStatsStore
from calipers.types import RunSummary

__all__ = ["Store"]

_LIST_HINT = "`calipers runs` lists stored runs."
_CHUNK = 500


def _no_nul(value: Any) -> Any:
    """``value`` with every NUL character in its strings (dict keys too) made U+FFFD.
    PostgreSQL refuses NUL in text, so one model answer holding it would lose its whole batch;
    the same rule on every store keeps them alike (the gateway's log does the same)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_no_nul(v) for v in value)
    return value


class Store(
    ReviewStore, ReviewPeopleStore, FingerprintStore, JobLeaseStore, ColumnStore, TrafficStatsStore
):
    """Persistent results. Open with :meth:`Store.open`; close with :meth:`close` or ``with``."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self.url = display_url(engine.url)
        """The database URL, password masked: safe to print."""

    @classmethod
    def open(cls, url: str | None = None, *, max_connections: int | None = None) -> Store:
        """Open (creating and migrating when needed) the store at ``url``.

        ``None`` means the SQLite file ``$CALIPERS_HOME/calipers.db``, or
        ``./.calipers/calipers.db`` without ``CALIPERS_HOME``. A plain path is a SQLite file;
        otherwise ``sqlite:///...`` or ``postgresql+psycopg://user:password@host/db``.
        ``max_connections`` caps this process's connections to a PostgreSQL server (default:
        up to 15); several processes on one server need theirs to add up to less than its
        ``max_connections``.
        """
        engine = create_engine(resolve_url(url), max_connections=max_connections)
        try:
            migrate(engine)
        except BaseException:
            engine.dispose()
            raise
        return cls(engine)

    def close(self) -> None:
        """Release the connections. Safe to call twice."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    # -- runs ---------------------------------------------------------------------------------

    def create_run(self, run: RunRecord) -> None:
        """Store a new run. Raises :class:`StoreError` if its id is taken."""
        try:
            with write_transaction(self._engine) as conn:
                row = run.model_dump() | {"summary": write_summary(run.summary)}
                conn.execute(runs.insert().values(**row))
        except sa.exc.IntegrityError as e:
            raise StoreError(
                f"A run with id {run.id!r} is already stored.",
                hint="Give the new run a fresh id, or resume the stored one.",
            ) from e

    def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus | None = None,
        finished_at: datetime | None = None,
        summary: RunSummary | None = None,
        config: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Set the given fields of run ``run_id`` (exact id); ``None`` leaves a field as it is."""
        if status is not None and status not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, not {status!r}")
        given = {
            "status": status,
            "finished_at": finished_at,
            "summary": write_summary(summary),
            "config": config,
            "error": error,
        }
        values = {k: v for k, v in given.items() if v is not None}
        with write_transaction(self._engine) as conn:
            if values:
                found = conn.execute(runs.update().where(runs.c.id == run_id).values(values))
                exists = found.rowcount > 0
            else:
                exists = conn.scalar(sa.select(runs.c.id).where(runs.c.id == run_id)) is not None
        if not exists:
            raise RunNotFoundError(f"No run has the id {run_id!r}.", hint=_LIST_HINT)

    def get_run(self, id_or_prefix: str) -> RunRecord:
        """The run with this exact id, else the one run whose id starts with it; ``"latest"``
        is the newest run. Raises :class:`RunNotFoundError` for no match or several."""
        with read_transaction(self._engine) as conn:
            if id_or_prefix == "latest":
                row = conn.execute(sa.select(runs).order_by(*NEWEST_FIRST).limit(1)).first()
                if row is None:
                    raise RunNotFoundError(
                        "No runs are stored yet.", hint="`calipers run` makes one."
                    )
                return row_to_run(row)
            row = conn.execute(sa.select(runs).where(runs.c.id == id_or_prefix)).first()
            if row is not None:
                return row_to_run(row)
            matches = runs_with_prefix(conn, id_or_prefix) if id_or_prefix else []
        if len(matches) == 1:
            return row_to_run(matches[0])
        if not matches:
            raise RunNotFoundError(f"No run matches {id_or_prefix!r}.", hint=_LIST_HINT)
        names = ", ".join(row.id for row in matches[:5])
        if len(matches) > 5:
            names += " and others"
        raise RunNotFoundError(
            f"{id_or_prefix!r} matches more than one run: {names}.",
            hint="Type more of the run id.",
        )

    def list_runs(
        self, *, limit: int | None = None, task: str | None = None, model: str | None = None
    ) -> list[RunRecord]:
        """Runs, newest first. ``task`` keeps runs that include that task; ``model`` keeps runs
        whose model spec or model name equals it."""
        stmt = sa.select(runs).order_by(*NEWEST_FIRST)
        if model is not None:
            stmt = stmt.where(sa.or_(runs.c.model == model, runs.c.model_name == model))
        if task is not None:
            # A cheap pre-filter on the JSON text; the exact test is done below.
            text = sa.type_coerce(runs.c.tasks, sa.Text)
            stmt = stmt.where(text.contains(json.dumps(task, ensure_ascii=False), autoescape=True))
        elif limit is not None:
            stmt = stmt.limit(limit)
        found: list[RunRecord] = []
        with read_transaction(self._engine) as conn:
            for row in conn.execute(stmt):
                if limit is not None and len(found) >= limit:
                    break
                run = row_to_run(row)
                if task is None or task in run.tasks:
                    found.append(run)
        return found

    def delete_run(self, run_id: str) -> int:
        """Delete run ``run_id`` (exact id) and its samples; return how many samples went."""
        with write_transaction(self._engine) as conn:
            gone = conn.execute(samples.delete().where(samples.c.run_id == run_id)).rowcount
            if conn.execute(runs.delete().where(runs.c.id == run_id)).rowcount == 0:
                raise RunNotFoundError(f"No run has the id {run_id!r}.", hint=_LIST_HINT)
        return int(gone)

    # -- samples ------------------------------------------------------------------------------

    def add_samples(self, records: Sequence[SampleRecord]) -> int:
        """Store ``records`` in one transaction; return how many rows were written.

        A record whose key ``(run_id, task, sample_id, epoch)`` is already stored *without*
        error is skipped: a successful sample is never replaced or duplicated. A record whose
        key is stored *with* an error replaces that row: a resumed run retries failed samples.
        """
        chosen: dict[tuple[str, str, str, int], SampleRecord] = {}
        for rec in records:  # the same rule within one batch as against the table
            prev = chosen.get((rec.run_id, *rec.key))
            if prev is None or not prev.ok:
                chosen[(rec.run_id, *rec.key)] = rec
        if not chosen:
            return 0
        rows = [_no_nul(rec.model_dump(exclude={"id"})) for rec in chosen.values()]
        try:
            with write_transaction(self._engine) as conn:
                result = conn.execute(upsert_samples(conn), rows)
                return len(result.all())
        except sa.exc.IntegrityError as e:
            run_ids = sorted({rec.run_id for rec in chosen.values()})
            raise StoreError(
                f"Cannot store samples of run {', '.join(map(repr, run_ids))}: "
                "no such run is stored.",
                hint="Store the run with create_run() before its samples.",
            ) from e

    def done_keys(self, run_id: str) -> set[SampleKey]:
        """``(task, sample_id, epoch)`` of the samples of ``run_id`` completed without error:
        what a resumed run skips. Samples stored with an error are not done."""
        stmt = sa.select(samples.c.task, samples.c.sample_id, samples.c.epoch).where(
            samples.c.run_id == run_id, samples.c.error.is_(None)
        )
        with read_transaction(self._engine) as conn:
            return {(r.task, r.sample_id, int(r.epoch)) for r in conn.execute(stmt)}

    def get_samples(self, run_id: str, *, task: str | None = None) -> list[SampleRecord]:
        """The samples of ``run_id`` (errors included), ordered by task, position, epoch."""
        stmt = sa.select(samples).where(samples.c.run_id == run_id)
        if task is not None:
            stmt = stmt.where(samples.c.task == task)
        stmt = stmt.order_by(samples.c.task, samples.c.position, samples.c.epoch)
        with read_transaction(self._engine) as conn:
            return [SampleRecord.model_validate(row._asdict()) for row in conn.execute(stmt)]

    # -- response cache -----------------------------------------------------------------------

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached value for ``key``, or ``None``."""
        return self.cache_get_many([key]).get(key)

    def cache_get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The cached values of those ``keys`` that are cached, by key: one read for many."""
        found: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(keys))
        with read_transaction(self._engine) as conn:
            for i in range(0, len(unique), _CHUNK):  # stay under the drivers' parameter limits
                chunk = unique[i : i + _CHUNK]
                stmt = sa.select(response_cache.c.key, response_cache.c.value).where(
                    response_cache.c.key.in_(chunk)
                )
                found.update({row.key: row.value for row in conn.execute(stmt)})
        return found

    def cache_put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key``, replacing any earlier value."""
        self.cache_put_many({key: value})

    def cache_put_many(self, items: Mapping[str, dict[str, Any]]) -> None:
        """Store many values in one transaction, each replacing any earlier value for its key."""
        if not items:
            return
        now = utc_now()
        rows = [{"key": k, "value": v, "created_at": now} for k, v in items.items()]
        with write_transaction(self._engine) as conn:
            conn.execute(upsert_cache(conn), rows)

    # -- gateway traffic ----------------------------------------------------------------------

    def add_traffic(self, records: Sequence[TrafficRecord]) -> int:
        """Store the gateway's records in one transaction; return how many rows were written.

        A record whose ``(pair_id, role)`` is already stored is skipped, so writing a batch
        again (a retry after an error) never duplicates a row.
        """
        if not records:
            return 0
        rows = [rec.model_dump(exclude={"id"}) for rec in records]
        with write_transaction(self._engine) as conn:
            result = conn.execute(_insert_traffic(conn.dialect.name), rows)
            return len(result.all())

    def get_traffic(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        role: TrafficRole | None = None,
        pair_id: str | None = None,
        limit: int | None = None,
    ) -> list[TrafficRecord]:
        """Gateway records with ``since <= ts < until``, oldest first (then in write order).

        ``role`` keeps one arm; ``pair_id`` the records of one request; ``limit`` the first
        ``limit`` of them.
        """
        if role is not None and role not in TRAFFIC_ROLES:
            raise ValueError(f"traffic role must be one of {TRAFFIC_ROLES}, not {role!r}")
        stmt = sa.select(traffic).order_by(traffic.c.ts, traffic.c.id)
        if since is not None:
            stmt = stmt.where(traffic.c.ts >= since)
        if until is not None:
            stmt = stmt.where(traffic.c.ts < until)
        if role is not None:
            stmt = stmt.where(traffic.c.role == role)
        if pair_id is not None:
            stmt = stmt.where(traffic.c.pair_id == pair_id)
        if limit is not None:
            stmt = stmt.limit(limit)
        with read_transaction(self._engine) as conn:
            return [TrafficRecord.model_validate(row._asdict()) for row in conn.execute(stmt)]

    # -- scores of logged traffic -------------------------------------------------------------

    def add_online_scores(self, records: Sequence[OnlineScoreRecord]) -> int:
        """Store scores of logged traffic in one transaction; return how many rows were written.

        A score whose ``(pair_id, role, scorer)`` is stored is kept, so scoring again never
        duplicates a row or replaces a real score; the one exception is a stored NaN ("could
        not be scored"), which a later real value replaces.
        """
        chosen: dict[tuple[str, str, str], OnlineScoreRecord] = {}
        for rec in records:  # within a batch: the first real value wins
            key = (rec.pair_id, rec.role, rec.scorer)
            if key not in chosen or math.isnan(chosen[key].value):
                chosen[key] = rec
        if not chosen:
            return 0
        rows = [
            rec.model_dump(exclude={"id"}) | {"value": _nan_to_null(rec.value)}
            for rec in chosen.values()
        ]
        with write_transaction(self._engine) as conn:
            result = conn.execute(_upsert_online_scores(conn.dialect.name), rows)
            return len(result.all())

    def get_online_scores(
        self,
        *,
        scorer: str | None = None,
        pair_ids: Sequence[str] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[OnlineScoreRecord]:
        """Stored scores of logged traffic, in the order they were stored.

        ``scorer`` keeps one scorer's key; ``pair_ids`` those requests; ``since``/``until``
        the requests that arrived in ``[since, until)`` by the traffic log's ``ts`` (the same
        window as ``get_traffic``), not by when they were scored.
        """
        stmt = sa.select(online_scores).order_by(online_scores.c.id)
        if scorer is not None:
            stmt = stmt.where(online_scores.c.scorer == scorer)
        if since is not None or until is not None:
            window = sa.select(traffic.c.pair_id)
            if since is not None:
                window = window.where(traffic.c.ts >= since)
            if until is not None:
                window = window.where(traffic.c.ts < until)
            stmt = stmt.where(online_scores.c.pair_id.in_(window))
        chunks: list[Any] = [None]
        if pair_ids is not None:
            unique = list(dict.fromkeys(pair_ids))
            chunks = [unique[i : i + _CHUNK] for i in range(0, len(unique), _CHUNK)]
        found: list[OnlineScoreRecord] = []
        with read_transaction(self._engine) as conn:
            for chunk in chunks:
                part = stmt if chunk is None else stmt.where(online_scores.c.pair_id.in_(chunk))
                found += [_row_to_score(row) for row in conn.execute(part)]
        if pair_ids is not None and len(chunks) > 1:
            found.sort(key=lambda r: r.id or 0)
        return found


def _nan_to_null(value: float) -> float | None:
    return None if math.isnan(value) else value


def _row_to_score(row: sa.Row[Any]) -> OnlineScoreRecord:
    d = row._asdict()
    d["value"] = math.nan if d["value"] is None else d["value"]
    return OnlineScoreRecord.model_validate(d)


@functools.cache
def _upsert_online_scores(dialect: str) -> Any:
    """Insert scores; on a stored key, replace only a stored NaN (NULL) with a real value."""
    stmt = dialect_insert(dialect, online_scores)
    return stmt.on_conflict_do_update(
        index_elements=[online_scores.c.pair_id, online_scores.c.role, online_scores.c.scorer],
        set_={c: stmt.excluded[c] for c in ("value", "details", "scored_at")},
        where=sa.and_(online_scores.c.value.is_(None), stmt.excluded.value.is_not(None)),
    ).returning(online_scores.c.id)


@functools.cache
def _insert_traffic(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING RETURNING id``, built once per dialect."""
    stmt = dialect_insert(dialect, traffic)
    return stmt.on_conflict_do_nothing(
        index_elements=[traffic.c.pair_id, traffic.c.role]
    ).returning(traffic.c.id)

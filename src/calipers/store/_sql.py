"""The statements the store needs that are more than one line, kept apart from its API.

Upserts use the dialect's own ``INSERT ... ON CONFLICT`` (SQLite and PostgreSQL spell it the
same way, through different SQLAlchemy constructs), chosen per connection.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from calipers.store._records import RunRecord
from calipers.store._schema import SAMPLE_KEY_COLUMNS, response_cache, runs, samples

__all__ = [
    "NEWEST_FIRST",
    "dialect_insert",
    "insert",
    "row_to_run",
    "runs_with_prefix",
    "upsert_cache",
    "upsert_samples",
]

NEWEST_FIRST = (runs.c.created_at.desc(), runs.c.id.desc())


def row_to_run(row: sa.Row[Any]) -> RunRecord:
    """A ``runs`` row as a record."""
    return RunRecord.model_validate(row._asdict())


def runs_with_prefix(conn: Connection, prefix: str) -> list[sa.Row[Any]]:
    # substr, not LIKE: LIKE ignores case on SQLite but not on PostgreSQL.
    stmt = (
        sa.select(runs)
        .where(sa.func.substr(runs.c.id, 1, len(prefix)) == prefix)
        .order_by(*NEWEST_FIRST)
        .limit(6)
    )
    return list(conn.execute(stmt))


def insert(conn: Connection, table: sa.Table) -> Any:
    """``INSERT`` with ``ON CONFLICT`` support, in the connection's dialect."""
    return dialect_insert(conn.dialect.name, table)


def dialect_insert(dialect: str, table: sa.Table) -> Any:
    """``INSERT`` with ``ON CONFLICT`` support for ``dialect`` (``postgresql`` or SQLite's).
    The dialect's module is imported here, when used: PostgreSQL's costs every SQLite run
    its import otherwise."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


def upsert_samples(conn: Connection) -> Any:
    """Insert samples; on a key already stored, replace the row only if it holds an error.

    ``RETURNING`` yields one row per sample written (inserted or replacing an error), and
    nothing for one skipped, so the caller can count what was written on both databases.
    The statement is built once per dialect: building it dominates a small batch's cost.
    """
    return _upsert_samples(conn.dialect.name)


def upsert_cache(conn: Connection) -> Any:
    """Insert cache entries, each replacing any earlier value for its key."""
    return _upsert_cache(conn.dialect.name)


@functools.cache
def _upsert_cache(dialect: str) -> Any:
    stmt = dialect_insert(dialect, response_cache)
    return stmt.on_conflict_do_update(
        index_elements=[response_cache.c.key],
        set_={"value": stmt.excluded.value, "created_at": stmt.excluded.created_at},
    )


@functools.cache
def _upsert_samples(dialect: str) -> Any:
    stmt = dialect_insert(dialect, samples)
    keep = {"id", *SAMPLE_KEY_COLUMNS}
    return stmt.on_conflict_do_update(
        index_elements=[samples.c[name] for name in SAMPLE_KEY_COLUMNS],
        set_={c.name: stmt.excluded[c.name] for c in samples.columns if c.name not in keep},
        where=samples.c.error.is_not(None),
    ).returning(samples.c.id)

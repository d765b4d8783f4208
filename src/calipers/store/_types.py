"""Column types that behave the same on SQLite and PostgreSQL.

JSON is stored as TEXT rather than a native JSON type: SQLite has none, and PostgreSQL's
``json`` rejects the NaN that calipers uses for "unscored" (Python's ``json`` writes and reads
it back), so TEXT is the one representation that round-trips everywhere.

Times are UTC-aware ``datetime`` objects in Python. SQLite stores them as fixed-width text
(which sorts correctly), PostgreSQL as ``timestamptz``; both come back as aware UTC values.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

__all__ = ["JSONText", "UTCDateTime"]


class JSONText(sa.types.TypeDecorator[Any]):
    """Any JSON-able Python value, stored as its JSON text. Python ``None`` is SQL NULL."""

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return json.loads(value)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """A timezone-aware UTC ``datetime``; a naive value is taken to be UTC already."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        # SQLite's DATETIME has no zone: store the UTC wall time so text order is time order.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

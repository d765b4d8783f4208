"""Wall clock in one place, so tests and records agree on time zone and format."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["utc_now", "utc_now_iso"]


def utc_now() -> datetime:
    return datetime.now(UTC)


def utc_now_iso() -> str:
    return utc_now().isoformat(timespec="seconds")

"""Run identifiers: sortable by creation time, unique, short enough to type a prefix of."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["new_run_id"]


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDD-HHMMSS-xxxxxx``: creation time (UTC) and six random hex digits."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"

"""Times and windows as users write them: ``--since 24h``, ``--until 2025-06-01T12:00``,
``--window 1h``, ``--reference 2025-06-01..2025-06-02``.

A relative time (``30m``, ``24h``, ``7d``, ``2w``) counts back from now; an ISO date or date-time
without a zone is UTC. Windows are half-open, ``[start, end)``, so a request belongs to one
window only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from calipers._util.duration import parse_seconds
from calipers.errors import ConfigError

__all__ = [
    "arm_prices",
    "floor_time",
    "is_relative",
    "parse_duration",
    "parse_prices",
    "parse_range",
    "parse_when",
    "window_edges",
]

MAX_WINDOWS = 10_000


def parse_duration(text: str) -> timedelta:
    """``90s``, ``15m``, ``1h``, ``1d``, ``2w`` as a positive ``timedelta``."""
    seconds = parse_seconds(text, unit_required=True)
    if seconds is None or seconds <= 0:  # "0h" is not a duration (write "now" for a time)
        raise ConfigError(
            f"Bad duration {text!r}.", hint="Use a number and a unit: 30m, 1h, 6h, 1d, 1w."
        )
    return timedelta(seconds=seconds)


def is_relative(text: str) -> bool:
    return parse_seconds(text, unit_required=True) is not None


def parse_when(text: str, now: datetime) -> datetime:
    """A relative time (``24h``: 24 hours before ``now``), ``now``, or an ISO date/date-time
    (no zone: UTC), as an aware UTC ``datetime``."""
    t = text.strip()
    if t.lower() == "now":
        return now
    if is_relative(t):
        return now - parse_duration(t)
    try:
        value = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"Bad time {text!r}.",
            hint="Use ISO (2025-06-01 or 2025-06-01T12:00), or a time back "
            "from now (24h, 7d), or 'now'.",
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def parse_range(text: str, now: datetime) -> tuple[datetime, datetime]:
    """``START..END`` (each as :func:`parse_when`), START before END."""
    start, sep, end = text.partition("..")
    if not sep or not start.strip() or not end.strip():
        raise ConfigError(
            f"Bad range {text!r}.", hint="Use START..END, e.g. 2025-06-01..2025-06-02 or 7d..6d."
        )
    a, b = parse_when(start, now), parse_when(end, now)
    if a >= b:
        raise ConfigError(f"Range {text!r} is empty: its start is not before its end.")
    return a, b


def floor_time(t: datetime, width: timedelta) -> datetime:
    """``t`` rounded down to a multiple of ``width`` since the Unix epoch (1h windows start
    on the hour, 1d windows at midnight UTC)."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    step = width.total_seconds()
    return epoch + timedelta(seconds=math.floor((t - epoch).total_seconds() / step) * step)


def window_edges(
    since: datetime, until: datetime, width: timedelta
) -> list[tuple[datetime, datetime]]:
    """Consecutive ``[start, end)`` windows of ``width`` from ``since``; the last one ends at
    ``until`` (it may be shorter)."""
    if until <= since:
        raise ConfigError(
            f"Nothing to monitor: --until ({until.isoformat()}) is not after "
            f"--since ({since.isoformat()})."
        )
    n = math.ceil((until - since) / width)
    if n > MAX_WINDOWS:
        raise ConfigError(
            f"{n:,} windows of {width} between {since:%Y-%m-%d %H:%M} and "
            f"{until:%Y-%m-%d %H:%M} is too many.",
            hint="Use a wider --window or a shorter --since/--until.",
        )
    return [(since + i * width, min(until, since + (i + 1) * width)) for i in range(n)]


def parse_prices(values: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``--price`` values as ``{arm: (input, output)}`` in dollars per million tokens.

    Each is ``[ARM=]IN/OUT`` (``IN,OUT`` is read the same); ARM is ``baseline`` or
    ``candidate``, and a price without one (key ``"*"``) applies to both arms."""
    out: dict[str, tuple[float, float]] = {}
    for v in values:
        arm, sep, pair = v.rpartition("=")
        arm = arm.strip() if sep else "*"
        if arm not in ("*", "baseline", "candidate"):
            raise ConfigError(f"Bad --price {v!r}: the arm must be baseline or candidate.")
        try:
            a, b = (float(x) for x in re.split(r"[/,]", pair))
        except ValueError:
            raise ConfigError(
                f"Bad --price {v!r}.",
                hint="Write [ARM=]IN/OUT in dollars per "
                "million tokens, e.g. --price baseline=0.15/0.60.",
            ) from None
        if not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b < 0:
            raise ConfigError(f"Bad --price {v!r}: prices must be finite and not negative.")
        out[arm] = (a, b)
    return out


def arm_prices(values: Sequence[str]) -> dict[str, dict[str, float]]:
    """``--price`` values as ``{arm: {"input": ..., "output": ...}}`` for both arms named
    (a price without an arm is given to both; one with an arm overrides it)."""
    prices = parse_prices(values)
    both = prices.pop("*", None)
    out = (
        {arm: {"input": both[0], "output": both[1]} for arm in ("baseline", "candidate")}
        if both
        else {}
    )
    out.update({arm: {"input": a, "output": b} for arm, (a, b) in prices.items()})
    return out

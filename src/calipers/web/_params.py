"""Query parameters of the A/B and Monitor pages, read the way the CLI reads its options.

Every bad value is a :class:`ConfigError` naming the parameter, so the page can say what to
fix. Parameters are spelled as the CLI's options, with ``-`` or ``_`` (``min-improvement``,
``min_improvement``); repeated ones (``price``) are read with :func:`param_values`.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TypeVar
from urllib.parse import urlencode

from calipers.errors import ConfigError
from calipers.web._sections import param_values

__all__ = ["command", "flag", "given", "iso", "many", "number", "text", "with_param"]

N = TypeVar("N", int, float)


def _names(key: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((key, key.replace("_", "-"), key.replace("-", "_"))))


def many(params: Mapping[str, str], key: str) -> list[str]:
    """Every non-blank value of ``key`` (either spelling), stripped."""
    return [v.strip() for k in _names(key) for v in param_values(params, k) if v.strip()]


def given(params: Mapping[str, str], key: str) -> bool:
    """Whether ``key`` is in the query at all, even blank (``?scorer=``: explicitly none)."""
    return any(param_values(params, k) for k in _names(key))


def text(params: Mapping[str, str], key: str) -> str | None:
    """The last non-blank value of ``key``, or None."""
    values = many(params, key)
    return values[-1] if values else None


def number(
    params: Mapping[str, str],
    key: str,
    kind: type[N],
    *,
    low: float | None = None,
    high: float | None = None,
    open_low: bool = False,
    open_high: bool = False,
) -> N | None:
    """``key`` as an ``int`` or ``float`` within bounds, or None when absent."""
    raw = text(params, key)
    if raw is None:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(
            f"Bad {key}={raw!r}: not a{'n integer' if kind is int else ' number'}.",
            hint=f"Give {key} as a number, or leave it out for the default.",
        ) from None
    bad = (
        not math.isfinite(value)
        or (low is not None and (value < low or (open_low and value == low)))
        or (high is not None and (value > high or (open_high and value == high)))
    )
    if bad:
        lo = "" if low is None else f"{'>' if open_low else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if open_high else '<='} {high:g}"
        bounds = " and ".join(x for x in (lo, hi) if x)
        raise ConfigError(f"Bad {key}={raw!r}: it must be {bounds}.")
    return value


def flag(params: Mapping[str, str], key: str) -> bool:
    raw = (text(params, key) or "").lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"Bad {key}={raw!r}: write true or false.")


def iso(t: datetime) -> str:
    """A time as the CLI reads it back exactly (UTC, ISO 8601)."""
    return t.isoformat()


def command(args: Sequence[str]) -> str:
    """A shell command line that a user can paste (each argument quoted where needed)."""
    return shlex.join(args)


def with_param(path: str, params: Mapping[str, str], key: str, value: str) -> str:
    """``path`` with the same query, ``key`` set to ``value`` (other values of it dropped)."""
    multi = getattr(params, "multi_items", None)
    items = list(multi()) if multi is not None else list(params.items())
    kept = [(k, v) for k, v in items if k not in _names(key)]
    return f"{path}?{urlencode([*kept, (key, value)])}"

"""Durations as people write them on a command line: ``90s``, ``30m``, ``1.5h``, ``7d``,
``2w`` (and ``90``, plain seconds, where the caller allows it). One parser for every option
that takes one (``run --deadline``, ``monitor --since 24h`` / ``--window 1h``)."""

from __future__ import annotations

import re

__all__ = ["parse_seconds"]

_FORM = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*")
_UNITS = {"s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def parse_seconds(text: str, *, unit_required: bool = False) -> float | None:
    """The duration ``text`` in seconds, or None when it is not a duration (the caller words
    the error for its option). A bare number is seconds unless ``unit_required``."""
    m = _FORM.fullmatch(text.lower())
    if m is None:
        return None
    unit = m.group(2)
    if unit not in _UNITS and not (unit == "" and not unit_required):
        return None
    return float(m.group(1)) * _UNITS.get(unit, 1.0)

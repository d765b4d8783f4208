"""``--deadline 30m``: a wall-clock duration as seconds, plain or with a unit (s, m, h)."""

from __future__ import annotations

import re

import click

__all__ = ["DURATION", "Duration"]

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_FORM = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*")


class Duration(click.ParamType):  # type: ignore[type-arg]
    """Seconds from ``"90"``, ``"90s"``, ``"30m"`` or ``"1.5h"``; must be positive."""

    name = "duration"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            m = _FORM.fullmatch(str(value).lower())
            if m is None or m.group(2) not in _UNITS:
                self.fail(f"{value!r} is not a duration: write seconds (90) or a number with "
                          "s, m or h (90s, 30m, 1.5h).", param, ctx)
            seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if seconds <= 0:
            self.fail(f"{value!r}: a duration must be more than 0 seconds.", param, ctx)
        return seconds


DURATION = Duration()

"""``--deadline 30m``: a wall-clock duration as seconds, plain or with a unit (s, m, h)."""

from __future__ import annotations

import click

from calipers._util.duration import parse_seconds

__all__ = ["DURATION", "Duration"]


class Duration(click.ParamType):  # type: ignore[type-arg]
    """Seconds from ``"90"``, ``"90s"``, ``"30m"`` or ``"1.5h"``; must be positive."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, int | float):
            seconds = float(value)
        else:
            parsed = parse_seconds(str(value))
            if parsed is None:
                self.fail(
                    f"{value!r} is not a duration: write seconds (90) or a number with "
                    "s, m or h (90s, 30m, 1.5h).",
                    param,
                    ctx,
                )
            seconds = parsed
        if seconds <= 0:
            self.fail(f"{value!r}: a duration must be more than 0 seconds.", param, ctx)
        return seconds


DURATION = Duration()

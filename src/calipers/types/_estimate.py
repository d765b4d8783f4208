"""The only way calipers reports an aggregate: a value with its interval, n and method."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

__all__ = ["Estimate"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with a confidence interval.

    ``n`` is the number of scored observations behind it. No data is ``value=NaN, n=0``,
    never 0. ``method`` names how the interval was computed (``wilson``, ``bootstrap``,
    ``cluster-t``, ...), so a reader can defend or question it.
    """

    value: float
    low: float
    high: float
    n: int
    method: str
    confidence: float = 0.95

    @classmethod
    def empty(cls, method: str = "none", confidence: float = 0.95) -> Estimate:
        nan = float("nan")
        return cls(nan, nan, nan, 0, method, confidence)

    @property
    def is_empty(self) -> bool:
        return self.n == 0 or math.isnan(self.value)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # JSON has no NaN: store it as null and read it back as NaN.
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Estimate:
        def f(x: Any) -> float:
            return float("nan") if x is None else float(x)

        return cls(
            f(d["value"]),
            f(d["low"]),
            f(d["high"]),
            int(d["n"]),
            str(d["method"]),
            float(d.get("confidence", 0.95)),
        )

    @classmethod
    def _validate(cls, value: Any) -> Estimate:
        if isinstance(value, Estimate):
            return value
        if isinstance(value, Mapping):
            return cls.from_dict(dict(value))
        raise ValueError(f"an Estimate or its dict, not {type(value).__name__}")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """As a pydantic field: read from an Estimate or its ``to_dict()`` (null is NaN),
        written as ``to_dict()``, the one stored and printed shape."""
        return core_schema.no_info_plain_validator_function(
            cls._validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda e: e.to_dict()),
        )

    def format(self, *, percent: bool = False, digits: int | None = None) -> str:
        """``0.412 [0.371, 0.455]`` or, with ``percent``, ``41.2% [37.1, 45.5]``."""
        if self.is_empty:
            return "n/a (n=0)"
        if percent:
            d = 1 if digits is None else digits
            return f"{100 * self.value:.{d}f}% [{100 * self.low:.{d}f}, {100 * self.high:.{d}f}]"
        d = 3 if digits is None else digits
        return f"{self.value:.{d}f} [{self.low:.{d}f}, {self.high:.{d}f}]"

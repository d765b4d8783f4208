"""A scorer's verdict on one sample."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Score"]


class Score(BaseModel):
    """Metric values for one sample (``{"acc": 1.0, "acc_norm": 0.0}``), the answer the
    scorer extracted from the output, and an optional explanation. A sample that could not be
    scored is not a Score of 0: it is an error on the sample record. ``tampering`` names what
    the output did to pass without earning it (code that exits before its tests ran, ...):
    such a sample scores as a failure and is counted apart in the run summary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    values: dict[str, float]
    answer: str | None = None
    explanation: str | None = None
    tampering: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def value(self) -> float:
        return next(iter(self.values.values()))

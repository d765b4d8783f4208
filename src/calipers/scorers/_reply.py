"""What an error rule reads of one scored sample: the store's record, flattened (scorers sit
below the store and never see its records)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ScoredReply"]


@dataclass(frozen=True)
class ScoredReply:
    """One scored sample of one task: ``passed`` by the task's ``primary`` metric (full
    credit); the raw ``response``, the scorer's parsed ``answer``, the ``target``, every
    metric in ``scores`` and the scorers' ``details`` (``SampleRecord.score_details``);
    ``output_tokens`` and the request's ``max_tokens`` tell a reply cut off at the limit."""

    sample_id: str
    passed: bool
    primary: str
    response: str | None = None
    answer: str | None = None
    target: str | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    output_tokens: int | None = None
    max_tokens: int | None = None

    @property
    def truncated(self) -> bool:
        """The reply used every token it was allowed (the finish reason ``length``)."""
        return (
            self.output_tokens is not None
            and self.max_tokens is not None
            and self.output_tokens >= self.max_tokens
        )

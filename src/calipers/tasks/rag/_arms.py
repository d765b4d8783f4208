"""The degradations of a :class:`RagArm` (see ``_arm``): placeholder until they land."""

from __future__ import annotations

from collections.abc import Sequence

from calipers.errors import ConfigError
from calipers.tasks.rag._arm import PromptBudget, RagArm
from calipers.types import Sample

__all__ = ["degrade"]


def degrade(
    items: Sequence[Sample], pool: Sequence[Sample], arm: RagArm, budget: PromptBudget | None
) -> list[Sample]:
    """``items`` showing the passages ``arm`` says; ``pool`` is every item of the task."""
    raise ConfigError(f"RAG arm {arm.describe()!r} is not implemented yet.")

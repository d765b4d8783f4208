"""One evaluation item."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Sample"]


class Sample(BaseModel):
    """An item of a task.

    ``input`` is the question (the task's prompt template places it). ``target`` is the
    reference answer: text for generation tasks; for multiple choice, ``choices`` holds the
    options and ``target`` the index of the right one. ``category`` drives per-category
    breakdowns; ``cluster`` groups items that are not independent (several questions on one
    passage) for clustered standard errors. ``fields`` holds extra template fields.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    input: str
    target: str | int | None = None
    choices: tuple[str, ...] | None = None
    category: str | None = None
    cluster: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def target_index(self) -> int:
        if not isinstance(self.target, int) or not self.choices:
            raise ValueError(f"sample {self.id!r} has no multiple-choice target")
        return self.target

    @property
    def target_text(self) -> str:
        if isinstance(self.target, int) and self.choices:
            return self.choices[self.target]
        return "" if self.target is None else str(self.target)

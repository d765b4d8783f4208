"""Everything that defines a run, as one validated object (stored, so a run can resume)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from calipers.models import DEFAULT_MODEL, ModelOptions
from calipers.tasks import DEFAULT_TASK, Variant

__all__ = ["RunConfig"]


class RunConfig(BaseModel):
    """A run's definition. ``None`` means "the task's own default" (few-shot k, decoding)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = DEFAULT_MODEL
    tasks: tuple[str, ...] = (DEFAULT_TASK,)
    formulation: str | None = None
    limit: int | None = Field(None, ge=1, description="items per task (dynamic: generated)")
    seed: int = 0
    few_shot: int | None = Field(None, ge=0)
    few_shot_seed: int | None = None
    chat_template: bool = True
    system_prompt: str | None = None
    data_dir: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0)
    concurrency: int | None = Field(None, ge=1)
    use_cache: bool = True
    model_options: ModelOptions = Field(default_factory=ModelOptions)
    confidence: float = Field(0.95, gt=0, lt=1)
    epochs: int = Field(1, ge=1, description="generations per item (pass@k, stability)")
    variant: Variant | None = None  # a presentation change (sensitivity studies)
    study: str | None = None  # groups the runs of one sensitivity study

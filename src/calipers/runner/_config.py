"""Everything that defines a run, as one validated object (stored, so a run can resume)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from calipers.models import DEFAULT_MODEL, ModelOptions
from calipers.tasks import DEFAULT_TASK, Variant
from calipers.tasks.rag import RagArm

__all__ = ["RunConfig"]


class RunConfig(BaseModel):
    """A run's definition. ``None`` means "the task's own default" (few-shot k, decoding)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The descriptions are the command line's help too (calipers.cli._run_options).
    model: str = Field(
        DEFAULT_MODEL,
        description="ALIAS | llamacpp:PATH.gguf | openai:MODEL | fake:echo ... "
        "(aliases: calipers models)",
    )
    tasks: tuple[str, ...] = Field((DEFAULT_TASK,), description="Task, suite or task file")
    formulation: str | None = Field(
        None, description="cloze | letter | generate, for tasks that offer several"
    )
    limit: int | None = Field(
        None, ge=1, description="Items per task (a dynamic task generates this many)"
    )
    seed: int = Field(0, description="Seed for generated items and bootstrap intervals")
    few_shot: int | None = Field(None, ge=0, description="Few-shot examples per item")
    few_shot_seed: int | None = Field(None, description="Seed of the few-shot draw")
    chat_template: bool = Field(
        True,
        description="Send chat messages through the model's chat template, or a plain prompt",
    )
    system_prompt: str | None = Field(None, description="System prompt for every item")
    data_dir: str | None = Field(None, description="Local benchmark data directory")
    max_tokens: int | None = Field(None, ge=1, description="Most new tokens per response")
    temperature: float | None = Field(None, ge=0, description="Sampling temperature")
    concurrency: int | None = Field(None, ge=1, description="Parallel requests")
    use_cache: bool = Field(True, description="Reuse stored responses to identical requests")
    model_options: ModelOptions = Field(default_factory=ModelOptions)
    confidence: float = Field(0.95, gt=0, lt=1)
    epochs: int = Field(
        1,
        ge=1,
        description="Generations per item, each with its own sampling seed (pass@k, "
        "stability); needs a temperature above 0",
    )
    max_steps: int | None = Field(
        None,
        ge=1,
        description="Most model calls in one episode of a conversation or agent task",
    )
    variant: Variant | None = None  # a presentation change (sensitivity studies)
    study: str | None = None  # groups the runs of one sensitivity study (or RAG stress test)
    rag: RagArm | None = None  # a degradation of a RAG task's context (calipers rag stress)
    rag_judge: str | None = Field(
        None,
        description="Judge model scoring claim faithfulness (rag_faithfulness) on RAG tasks",
    )

"""The methodology card: everything needed to defend, reproduce or refuse to compare a number."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from calipers._util.clock import utc_now_iso
from calipers._util.environment import calipers_version, git_revision, package_versions
from calipers._util.hashing import json_hash
from calipers.runner._seeds import RunSeeds
from calipers.types import GenerateParams, ModelIdentity

__all__ = ["Methodology", "TaskMethodology", "chat_hash", "comparable_hash", "prompt_hash"]


class TaskMethodology(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    version: str
    kind: str
    formulation: str | None = None
    # why this formulation runs instead of the one asked for or the task's default (the
    # provider cannot score log-likelihoods); None: as asked
    formulation_fallback: str | None = None
    source: str
    data_hash: str
    n_items: int
    dynamic: bool
    limit: int | None
    prompt_template: dict[str, str]
    prompt_hash: str
    chat_template: bool
    chat_template_hash: str | None
    system_prompt: str | None
    few_shot: int
    few_shot_seed: int
    few_shot_sampling: str = "per_item"
    few_shot_match: str | None = None
    decoding: GenerateParams
    scorers: list[dict[str, Any]]
    variant: dict[str, Any] | None = None  # a presentation change (sensitivity studies)
    epochs: int = 1  # generations per item
    rag_arm: dict[str, Any] | None = None  # a RAG context degradation (calipers rag stress)
    # an episode task (conversation, agent): its limits, the tools offered (names and a hash
    # of their schemas) and what the task says about its environment (``Task.episode_card``:
    # world and version, user simulator, history arm, probe)
    episode: dict[str, Any] | None = None
    data_source: str | None = None  # hf://datasets/ID@SHA/CONFIG/SPLIT when read from the hub


class Methodology(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    model: ModelIdentity
    model_spec: str
    tasks: dict[str, TaskMethodology]
    # The run's streams, derived from the user's seed (``RunConfig.seed``, stored in the run's
    # config): the items (and each sample row) drew from ``items``, finalize from ``bootstrap``.
    seeds: RunSeeds
    confidence: float
    calipers_version: str
    git_revision: str | None
    packages: dict[str, str]
    created_at: str
    # How the model ran where that changes speed, not answers (llamacpp: n_threads and
    # n_threads_batch); recorded, never compared.
    model_runtime: dict[str, int | str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _seeds_of_older_cards(cls, data: Any) -> Any:
        """A card stored before the streams were separate copied the user's seed into every
        task (``tasks[t]["seed"]``) and drew both streams from it: read it as such."""
        if not isinstance(data, dict) or "seeds" in data:
            return data
        tasks = data.get("tasks") or {}
        old = [t["seed"] for t in tasks.values() if isinstance(t, dict) and "seed" in t]
        return {
            **data,
            "seeds": RunSeeds.legacy(int(old[0]) if old else 0),
            "tasks": {
                name: {k: v for k, v in t.items() if k != "seed"} if isinstance(t, dict) else t
                for name, t in tasks.items()
            },
        }

    @classmethod
    def create(
        cls,
        model: ModelIdentity,
        model_spec: str,
        tasks: dict[str, TaskMethodology],
        seeds: RunSeeds,
        confidence: float,
        model_runtime: dict[str, int | str] | None = None,
    ) -> Methodology:
        return cls(
            model=model,
            model_spec=model_spec,
            tasks=tasks,
            seeds=seeds,
            confidence=confidence,
            calipers_version=calipers_version(),
            git_revision=git_revision(),
            packages=package_versions(),
            created_at=utc_now_iso(),
            model_runtime=model_runtime or {},
        )


def prompt_hash(template: dict[str, str]) -> str:
    return json_hash(template)


def chat_hash(enabled: bool, model: ModelIdentity) -> str | None:
    return model.chat_template_hash if enabled else None


# Not compared between runs of different models: the limit is implied by the data hash (same
# items, same measurement; the seeds are the run's, ``Methodology.seeds``, not a task's), and
# the chat template's text belongs to the model (whether it is used, ``chat_template``, is
# compared). A formulation run as a fallback measures
# the same as when asked for (``formulation`` and the prompt are compared).
_NOT_COMPARED = {
    "limit",
    "n_items",
    "chat_template_hash",
    "data_source",
    "formulation_fallback",
}


def comparable_hash(card: Methodology, task: str) -> str:
    """Hash of what must match for two runs' scores on ``task`` to be comparable: the task
    methodology without the model (comparisons are between models), without the software
    versions (recorded, but a patch release must not make runs incomparable), and without
    what the data hash already pins down."""
    data = card.tasks[task].model_dump(mode="json", exclude=_NOT_COMPARED)
    if data.get("variant") is None:  # runs made before variants existed still compare
        data.pop("variant", None)
    if data.get("epochs") == 1:  # ... and before epochs
        data.pop("epochs", None)
    if data.get("rag_arm") is None:  # ... and before RAG arms
        data.pop("rag_arm", None)
    if data.get("episode") is None:  # ... and before episodes
        data.pop("episode", None)
    return json_hash(data)

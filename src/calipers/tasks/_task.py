"""A task: samples + prompt formulation + scorers + version."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from calipers._util.hashing import canonical_json
from calipers.scorers import Scorer
from calipers.tasks._prompt import PromptTemplate
from calipers.types import Environment, EpisodeLimits, Estimate, GenerateParams, Sample

__all__ = [
    "Derived",
    "EnvironmentFactory",
    "FewShotSampling",
    "LoadContext",
    "Task",
    "TaskKind",
    "data_hash",
]

TaskKind = Literal["generate", "multiple_choice", "episode"]
FewShotSampling = Literal["per_item", "fixed"]


@dataclass(frozen=True)
class LoadContext:
    """What a task's loader may use: the seed (dynamic tasks generate from it), the number of
    items wanted (dynamic tasks generate that many; ``None`` means the task's default), and the
    data directory for tasks that read files."""

    seed: int = 0
    n: int | None = None
    data_dir: Path | None = None


Loader = Callable[[LoadContext], Sequence[Sample]]
# Task-level metrics that are not a mean of per-sample values (a ratio such as BBQ's bias
# score, a micro-average over instructions): computed from the stored sample records (objects
# with ``scores``, ``score_details``, ``error``, ``category``...) at finalize, with intervals.
Derived = Callable[[Sequence[Any]], dict[str, Estimate]]
# An episode task's items are conversations or tool worlds: a fresh environment per item and
# episode (``Environment`` in calipers.types), which the runner's agent loop talks to.
EnvironmentFactory = Callable[[Sample], Environment]


@dataclass(frozen=True)
class Task:
    """An evaluation task.

    ``load`` returns the evaluation samples; ``fewshot`` returns the pool few-shot examples
    are drawn from (never the evaluation items themselves). ``kind`` says whether samples are
    answered by generation or scored by log-likelihood over ``Sample.choices``, or (kind
    ``episode``) played out over several model calls against ``environment(sample)`` under
    ``limits``: a conversation's turns, or an agent's tool calls in a world.
    """

    name: str
    version: str
    description: str
    kind: TaskKind
    load: Loader
    scorers: tuple[Scorer, ...]
    prompt: PromptTemplate = field(default_factory=PromptTemplate)
    fewshot: Loader | None = None
    default_few_shot: int = 0
    few_shot_seed: int = 1234
    few_shot_sampling: FewShotSampling = "per_item"
    few_shot_match: Literal["category"] | None = None  # shots share the item's category
    formulation: str | None = None  # for tasks offering several (cloze, letter, generate)
    derived: Derived | None = None
    params: GenerateParams = field(default_factory=GenerateParams)
    # decoding with the chat template on, where plain-completion stops would cut the reply
    # (HumanEval's "\ndef" ends a fenced answer early); None: ``params`` either way
    chat_params: GenerateParams | None = None
    default_n: int | None = None
    environment: EnvironmentFactory | None = None  # kind "episode": one per item and episode
    limits: EpisodeLimits = field(default_factory=EpisodeLimits)
    # what the methodology card records of an episode task's environment beyond its limits and
    # tools: the world and its version, the user simulator, the history arm, the probe
    episode_card: dict[str, Any] = field(default_factory=dict)
    dynamic: bool = False
    source: str = "calipers"
    license: str = "Apache-2.0"
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.kind == "episode") != (self.environment is not None):
            raise ValueError(
                f"task {self.name!r}: an episode task needs an environment, and only an "
                "episode task has one"
            )

    @property
    def metrics(self) -> list[str]:
        return [m for s in self.scorers for m in s.metrics]


def data_hash(samples: Iterable[Sample]) -> str:
    """Content hash of the evaluation items (ids, inputs, targets, choices, fields): the
    hash of their list's canonical JSON, computed one item at a time (a million items are
    never held at once for it)."""
    h = hashlib.sha256(b"[")
    for i, s in enumerate(samples):
        if i:
            h.update(b",")
        h.update(canonical_json(s.model_dump(mode="json", exclude={"metadata"})).encode("utf-8"))
    h.update(b"]")
    return h.hexdigest()[:32]

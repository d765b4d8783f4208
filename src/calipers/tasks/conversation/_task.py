"""Multi-turn tasks from conversation items: each item a list of user turns with checks at
chosen turns, played with the model's own history or the golden one."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from calipers.errors import DataError
from calipers.scorers import build_scorer
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.conversation._env import History, ScriptedConversation
from calipers.types import ChatMessage, EpisodeLimits, GenerateParams, Sample

__all__ = ["HISTORIES", "conversation_environment", "conversation_task", "with_history"]

HISTORIES: tuple[History, ...] = ("own", "golden")


def conversation_environment(history: History) -> Callable[[Sample], ScriptedConversation]:
    """The environment factory of a conversation item (``Sample.fields``: turns, golden,
    system; see ``_files``)."""

    def make(sample: Sample) -> ScriptedConversation:
        turns = list(sample.fields["turns"])
        system = sample.fields.get("system")
        opening = [ChatMessage(role="system", content=system)] if system else []
        opening.append(ChatMessage(role="user", content=turns[0]))
        golden = sample.fields.get("golden") or ()
        return ScriptedConversation(opening, turns[1:], golden=golden, history=history)

    return make


def _needs_golden(load: Callable[[LoadContext], Sequence[Sample]], name: str) -> Any:
    def checked(ctx: LoadContext) -> list[Sample]:
        samples = list(load(ctx))
        missing = [s.id for s in samples if not s.fields.get("golden")]
        if missing:
            raise DataError(
                f"Task {name!r}: the golden history needs golden replies, and "
                f"{len(missing)} item(s) have none (first: {missing[0]!r}).",
                hint="Give each such row a `golden` list (one reply per turn), or run the "
                "own-history arm only.",
            )
        return samples

    return checked


def conversation_task(
    name: str,
    load: Callable[[LoadContext], Sequence[Sample]],
    *,
    history: History = "own",
    version: str = "1",
    description: str = "",
    params: GenerateParams | None = None,
    max_turns: int = 64,
    source: str = "user",
    license: str = "unknown",
    tags: tuple[str, ...] = (),
) -> Task:
    """A task whose items are conversations scored by their checks (``conversation_checks``)."""
    if history not in HISTORIES:
        raise ValueError(f"history is one of {HISTORIES}, not {history!r}")
    return Task(
        name=name,
        version=version,
        description=description or f"Conversations ({history} history)",
        kind="episode",
        load=_needs_golden(load, name) if history == "golden" else load,
        scorers=(build_scorer("conversation_checks"),),
        params=params or GenerateParams(),
        environment=conversation_environment(history),
        limits=EpisodeLimits(max_steps=max_turns),
        episode_card={"conversation": "scripted", "history": history},
        source=source,
        license=license,
        tags=(*tags, "conversation"),
    )


def with_history(task: Task, history: History) -> Task:
    """A conversation task with the other history arm (the same items and checks)."""
    if task.episode_card.get("conversation") != "scripted":
        raise DataError(
            f"Task {task.name!r} is not a scripted conversation task; it has no history arms.",
            hint="Use a task file with a `conversation:` section.",
        )
    if task.episode_card.get("history") == history:
        return task
    load = task.load
    if history == "golden":
        load = _needs_golden(load, task.name)
    return replace(
        task,
        load=load,
        environment=conversation_environment(history),
        episode_card={**task.episode_card, "history": history},
    )

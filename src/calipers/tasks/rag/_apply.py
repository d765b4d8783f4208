"""Applying a :class:`RagArm` to a task: the items' passages degraded before planning."""

from __future__ import annotations

import dataclasses

from calipers.errors import ConfigError
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.rag._arm import PromptBudget, RagArm
from calipers.tasks.rag._arms import degrade
from calipers.types import Sample

__all__ = ["apply_rag_arm", "is_rag_task"]


def is_rag_task(task: Task) -> bool:
    return "rag" in task.tags


def apply_rag_arm(task: Task, arm: RagArm | None, budget: PromptBudget | None = None) -> Task:
    """``task`` with every item's passages degraded as ``arm`` says. The pool distractors and
    filler are drawn from is every item the task loads (not only the first ``--limit``), so a
    short run draws from the same pool as a long one. Raises ConfigError for a task that is not
    a RAG task, and for a fill arm without a budget."""
    if arm is None or arm.is_clean:
        return task
    if not is_rag_task(task):
        raise ConfigError(
            f"{task.name} is not a RAG task: its items carry no passages to degrade.",
            hint="Use a RAG task: nq_open_oracle, kv_retrieval, dyn_rag or a RAG file.",
        )
    if arm.fill is not None and budget is None:
        raise ConfigError(
            "A context-fill arm needs the model's tokenizer and window.",
            hint="Run it with a model that counts tokens (a llamacpp model).",
        )
    load = task.load

    def load_arm(ctx: LoadContext) -> list[Sample]:
        items = list(load(ctx))
        items = items[: ctx.n] if ctx.n else items
        pool = list(load(dataclasses.replace(ctx, n=None)))
        return degrade(items, pool, arm, budget)

    return dataclasses.replace(task, load=load_arm)

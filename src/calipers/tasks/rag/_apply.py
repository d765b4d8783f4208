"""Applying a :class:`RagArm` to a task: the items' passages degraded before planning."""

from __future__ import annotations

import dataclasses

from calipers._util.hashing import json_hash
from calipers.errors import ConfigError
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.rag._arm import PromptBudget, RagArm
from calipers.tasks.rag._arms import degrade
from calipers.types import Sample

__all__ = ["apply_rag_arm", "is_rag_task"]

# Degraded item sets of context-fill arms, by everything they depend on: a stress test plans
# each arm to check it (calipers rag stress), then runs it, which plans it again; counting a
# filled window with the model's tokenizer is the slow part of planning.
_MEMO: dict[str, tuple[Sample, ...]] = {}
_MEMO_SIZE = 16


def _memo_key(task: Task, arm: RagArm, ctx: LoadContext, budget: PromptBudget | None) -> str | None:
    if budget is None or budget.key is None:
        return None
    return json_hash(
        [budget.key, task.name, task.version, arm.model_dump(mode="json"), ctx.seed, ctx.n,
         str(ctx.data_dir)]
    )  # fmt: skip


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
        key = _memo_key(task, arm, ctx, budget)
        if key is not None and key in _MEMO:
            return list(_MEMO[key])
        items = list(load(ctx))
        items = items[: ctx.n] if ctx.n else items
        pool = list(load(dataclasses.replace(ctx, n=None)))
        out = degrade(items, pool, arm, budget)
        if key is not None:
            _MEMO[key] = tuple(out)
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.pop(next(iter(_MEMO)))
        return out

    return dataclasses.replace(task, load=load_arm)

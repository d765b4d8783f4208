"""The library entry points: run, resume (``calipers.run`` mirrors ``calipers run``)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Container
from dataclasses import dataclass
from typing import Any

from calipers._util.clock import utc_now
from calipers._util.environment import calipers_version
from calipers._util.hashing import json_hash
from calipers._util.ids import new_run_id
from calipers.errors import DeadlineError, ResumeError
from calipers.models import ModelOptions, ModelProvider
from calipers.runner._config import RunConfig
from calipers.runner._fallback import fallback_note
from calipers.runner._finalize import summarize_stored
from calipers.runner._methodology import Methodology, comparable_hash
from calipers.runner._plan import Plan, make_plan
from calipers.runner._ray import RayExecutor
from calipers.runner._sample import metric_names
from calipers.runner._schedule import Progress, execute
from calipers.store import RunRecord, Store
from calipers.types import RunSummary

__all__ = ["RunResult", "aresume", "arun", "run"]


@dataclass(frozen=True)
class RunResult:
    run_id: str
    status: str
    summary: RunSummary
    methodology: Methodology
    elapsed_s: float

    @property
    def failed_tasks(self) -> list[str]:
        """Tasks in which every sample failed (a dead or wrong endpoint, not a bad model):
        their scores are empty, and ``calipers run`` exits non-zero."""
        return self.summary.failed_tasks


@dataclass(frozen=True)
class _Deadline:
    """``budget_s`` of wall-clock time from the call (planning included), ending ``at``
    (``time.monotonic()``)."""

    budget_s: float
    at: float

    @classmethod
    def start(cls, budget_s: float | None) -> _Deadline | None:
        return None if budget_s is None else cls(budget_s, time.monotonic() + budget_s)

    def text(self) -> str:
        s = self.budget_s
        return f"{s / 60:.3g} min" if s >= 120 else f"{s:.3g} s"


def _deadline_hit(run_id: str, plan: Plan, store: Store, deadline: _Deadline) -> DeadlineError:
    pending = plan.total - store.count_samples(run_id, done=True)
    message = (
        f"The run reached its deadline ({deadline.text()}) with {pending} of "
        f"{plan.total} samples not done; they are left pending, nothing finished is lost."
    )
    store.update_run(run_id, status="interrupted", error=message)
    return DeadlineError(
        message,
        run_id=run_id,
        pending=pending,
        hint=f"Resume with: calipers run --resume {run_id} (--deadline and --timeout bound it "
        "again).",
    )


def _finalize(run_id: str, plan: Plan, store: Store, started: float) -> RunResult:
    metrics = {pt.task.name: metric_names(pt.task.scorers) for pt in plan.tasks}
    derived = {pt.task.name: pt.task.derived for pt in plan.tasks if pt.task.derived}
    summary = summarize_stored(  # from columns, in chunks: bounded at a million samples
        store,
        run_id,
        metrics,
        seed=plan.methodology.seeds.bootstrap,  # the recorded stream: the stored card's on resume
        confidence=plan.config.confidence,
        derived=derived,
    )
    elapsed = time.perf_counter() - started
    summary = summary.model_copy(update={"elapsed_s": round(elapsed, 3)})
    store.update_run(run_id, status="finished", finished_at=utc_now(), summary=summary)
    return RunResult(run_id, "finished", summary, plan.methodology, elapsed)


async def _execute_and_finalize(
    run_id: str,
    plan: Plan,
    store: Store,
    done: Container[tuple[str, str, int]],
    progress: Progress | None,
    deadline: _Deadline | None,
    executor: RayExecutor | None = None,
    provider_given: bool = False,
) -> RunResult:
    started = time.perf_counter()
    if progress:
        progress.start_run(run_id)
        for task, m in plan.methodology.tasks.items():
            if m.formulation_fallback:
                progress.note(fallback_note(task, m.formulation_fallback))
    go = execute
    if executor is not None:  # how the samples run, never what is measured
        go = functools.partial(executor.execute, provider_given=provider_given)
    try:
        if not await go(
            run_id,
            plan,
            store,
            done=done,
            progress=progress,
            deadline=deadline.at if deadline else None,
        ):
            assert deadline is not None
            raise _deadline_hit(run_id, plan, store, deadline)
    except DeadlineError:
        raise
    except (KeyboardInterrupt, asyncio.CancelledError):
        store.update_run(run_id, status="interrupted")
        raise
    except BaseException as e:
        store.update_run(run_id, status="failed", error=f"{type(e).__name__}: {e}")
        raise
    finally:
        await plan.provider.aclose()
    return _finalize(run_id, plan, store, started)


async def arun(
    config: RunConfig,
    store: Store,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
    deadline_s: float | None = None,
    executor: RayExecutor | None = None,
) -> RunResult:
    """Plan, execute and finalize a new run; the run is stored before the first sample.
    After ``deadline_s`` seconds the run stops, is stored as interrupted (resumable) and
    :class:`DeadlineError` says how many samples are left. ``executor``: run the samples on
    a Ray cluster (``RayExecutor``) instead of in this process."""
    deadline = _Deadline.start(deadline_s)
    if executor is not None:
        executor.check()
    plan = make_plan(config, provider)
    run_id = new_run_id()
    card = plan.methodology
    store.create_run(
        RunRecord(
            id=run_id,
            created_at=utc_now(),
            finished_at=None,
            status="running",
            tasks=[pt.task.name for pt in plan.tasks],
            methodology=card.model_dump(mode="json"),
            methodology_hash=json_hash(
                [
                    card.model.model_dump(mode="json"),
                    {t: comparable_hash(card, t) for t in card.tasks},
                ]
            ),
            config=config.model_dump(mode="json"),
            summary=None,
            calipers_version=calipers_version(),
        )
    )
    return await _execute_and_finalize(
        run_id, plan, store, set(), progress, deadline, executor, provider is not None
    )


def _explain_mismatch(old: Methodology, new: Methodology) -> str | None:
    if old.model.key() != new.model.key():
        return "the model is not the same (identity or file hash changed)"
    for task, m in old.tasks.items():
        if task not in new.tasks:
            return f"task {task!r} is no longer part of the plan"
        if comparable_hash(old, task) != comparable_hash(new, task):
            a, b = m.model_dump(), new.tasks[task].model_dump()
            fields = [k for k in a if a[k] != b.get(k)]
            return f"task {task!r} changed ({', '.join(fields)})"
    return None


async def aresume(
    run_id: str,
    store: Store,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
    deadline_s: float | None = None,
    model_options: dict[str, Any] | None = None,
    executor: RayExecutor | None = None,
) -> RunResult:
    """Finish an interrupted run: same plan, skipping samples already stored.
    ``model_options`` changes how requests are made this time (``timeout_s``,
    ``max_retries``, the ``fleet`` of servers: the model they serve must be the same),
    never what is measured."""
    deadline = _Deadline.start(deadline_s)
    if executor is not None:
        executor.check()
    rec = store.get_run(run_id)
    if rec.status == "finished":
        raise ResumeError(
            f"Run {rec.id} is already finished.", hint=f"`calipers show {rec.id}` shows it."
        )
    config = RunConfig.model_validate(rec.config)
    if model_options:
        update = _request_options(model_options)
        if update.get("fleet"):  # another fleet of servers: the identity check below says
            update["base_url"] = None  # whether it serves the same model
        options = ModelOptions.model_validate({**config.model_options.model_dump(), **update})
        config = config.model_copy(update={"model_options": options})
    plan = make_plan(config, provider)
    old = Methodology.model_validate(rec.methodology)
    why = _explain_mismatch(old, plan.methodology)
    if why:
        raise ResumeError(
            f"Run {rec.id} cannot be resumed: {why}.",
            hint="Start a new run instead; mixing the two would make its numbers meaningless.",
        )
    store.update_run(rec.id, status="running")
    plan = Plan(plan.config, plan.provider, plan.tasks, old)
    return await _execute_and_finalize(
        rec.id,
        plan,
        store,
        store.done_index(rec.id),
        progress,
        deadline,
        executor,
        provider is not None,
    )


_REQUEST_OPTIONS = ("timeout_s", "max_retries", "fleet")


def _request_options(options: dict[str, Any]) -> dict[str, Any]:
    wrong = sorted(set(options) - set(_REQUEST_OPTIONS))
    if wrong:
        raise ResumeError(
            f"A resumed run cannot change {', '.join(wrong)}: it is part of what was measured.",
            hint=f"Only {', '.join(_REQUEST_OPTIONS)} may change on resume.",
        )
    return ModelOptions.model_validate(options).model_dump(include=set(options))


def run(
    model: str | ModelProvider = "smollm2",
    task: str | list[str] = "dynamic",
    *,
    store: Store | None = None,
    deadline_s: float | None = None,
    **options: Any,
) -> RunResult:
    """Evaluate ``model`` on ``task`` (names, suites or spec paths); options as RunConfig.
    ``deadline_s`` bounds the run's wall-clock time (see :func:`arun`)."""
    provider = model if isinstance(model, ModelProvider) else None
    spec = f"{provider.provider_name}:{provider.identity().name}" if provider else str(model)
    tasks = (task,) if isinstance(task, str) else tuple(task)
    config = RunConfig(model=spec, tasks=tasks, **options)
    own = store is None
    st = store or Store.open()
    try:
        return asyncio.run(arun(config, st, provider=provider, deadline_s=deadline_s))
    finally:
        if own:
            st.close()

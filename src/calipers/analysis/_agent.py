"""Agent studies: an agent's runs with trials, beside the baselines that keep its score honest.

``calipers agent run`` stores one study (``RunConfig.study``, id ``agent-...``): the agent
under test with K trials per item (the runner's epochs), then on the same items the trivial
baselines (``baseline:do-nothing``, one trial; ``baseline:random-tool``, K trials) and, where
the task's environment has an oracle, ``baseline:oracle``. The report reads the success of
each trial from the task's pass/fail metric (``success`` when the scorer reports one, else
the task's primary metric; 1 is a pass) and gives success and each grading component with
intervals, pass^k and pass@k for k = 1..K, the flip rate, the baselines' rates, the items a
trivial baseline passes (invalid: they grade nothing the agent did; results are shown with
and without them), the items the oracle fails (broken), and the minimum detectable difference
for a comparison with another agent on these items.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calipers._util.ids import new_run_id
from calipers._util.seeding import derived_rng
from calipers.analysis._align import StoredRun
from calipers.analysis._study import AGENT_PREFIX
from calipers.errors import ConfigError
from calipers.models import ModelProvider, resolve_model
from calipers.runner import Progress, RunConfig, arun, make_plan
from calipers.stats import (
    between_task_variance,
    flip_rate_estimate,
    min_detectable_difference,
    pass_at_k_curve,
    pass_hat_k_curve,
    summarize,
)
from calipers.store import SampleRecord, Store
from calipers.types import Estimate, ModelRequest

__all__ = [
    "AGENT_PREFIX",
    "AgentPlan",
    "AgentReport",
    "AgentTaskReport",
    "agent_report",
    "list_agent_studies",
    "load_agent_study",
    "plan_agent_study",
    "run_agent_study",
]

DO_NOTHING, RANDOM_TOOL, ORACLE = "baseline:do-nothing", "baseline:random-tool", "baseline:oracle"
TRIVIAL = (DO_NOTHING, RANDOM_TOOL)


@dataclass(frozen=True)
class AgentPlan:
    """The runs of one agent study, in the order they run; ``no_oracle`` names the tasks whose
    environment gives no oracle (the oracle check cannot run there)."""

    study: str
    agent: RunConfig
    baselines: tuple[RunConfig, ...]
    no_oracle: tuple[str, ...]

    @property
    def configs(self) -> tuple[RunConfig, ...]:
        return (self.agent, *self.baselines)


def _probe(config: RunConfig) -> tuple[list[str], list[str], list[str]]:
    """The tasks whose environment answers ``oracle`` on its first item, those that do not,
    and those decoded greedily (temperature 0 once the task's defaults apply). A task that is
    not an agent's task (no environment) is refused."""
    oracle = config.model_copy(update={"model": ORACLE, "epochs": 1})
    plan = make_plan(oracle, resolve_model(ORACLE))
    have: list[str] = []
    lack: list[str] = []
    greedy: list[str] = []
    for pt in plan.tasks:
        if pt.task.kind != "episode":
            raise ConfigError(
                f"Task {pt.task.name!r} is not an agent's task (its kind is {pt.task.kind!r}): "
                "calipers agent runs tool worlds and conversations.",
                hint="Pass a task of kind 'episode' (calipers tasks lists them), or use "
                "calipers run for other tasks.",
            )
        first = pt.samples[0] if pt.samples else None
        request = first.request if first is not None else None
        if isinstance(request, ModelRequest) and request.params.temperature == 0:
            greedy.append(pt.task.name)
        if first is None or first.environment is None:
            lack.append(pt.task.name)
            continue
        assert isinstance(first.request, ModelRequest)
        env = first.environment()
        has = env.oracle(tuple(first.request.messages or ())) is not None
        (have if has else lack).append(pt.task.name)
    return have, lack, greedy


def plan_agent_study(base: RunConfig, trials: int, *, study: str | None = None) -> AgentPlan:
    """The agent's config with ``trials`` epochs, and its baselines on the same items."""
    if trials < 1:
        raise ConfigError(f"--trials {trials}: give at least 1 trial per item.")
    study = study or f"{AGENT_PREFIX}{new_run_id()}"
    agent = base.model_copy(update={"study": study, "epochs": trials})
    have, lack, greedy = _probe(agent)
    if trials > 1 and greedy:
        raise ConfigError(
            f"--trials {trials} at temperature 0 on {', '.join(greedy)}: a greedy model answers "
            "the same every time, and a scripted user says the same every time, so every trial "
            "would repeat the first one and pass^k would equal pass^1 by construction.",
            hint="Sample: --temperature 0.7 (or the temperature you deploy with); "
            "or run --trials 1 for one greedy trial.",
        )
    baselines = [
        agent.model_copy(update={"model": DO_NOTHING, "epochs": 1}),
        agent.model_copy(update={"model": RANDOM_TOOL}),
    ]
    if have:
        # never from the response cache: a world whose oracle was fixed must be replayed
        oracle = {"model": ORACLE, "epochs": 1, "tasks": tuple(have), "use_cache": False}
        baselines.append(agent.model_copy(update=oracle))
    return AgentPlan(study, agent, tuple(baselines), tuple(lack))


def run_agent_study(
    plan: AgentPlan,
    store: Store,
    *,
    provider: ModelProvider | None = None,
    progress: Progress | None = None,
    on_run: Callable[[str, str], None] | None = None,
) -> list[str]:
    """Run the agent (with ``provider`` if given), then each baseline; the run ids in order."""
    ids = []
    for i, config in enumerate(plan.configs):
        who = provider if i == 0 else None  # a baseline: from its spec
        result = asyncio.run(arun(config, store, provider=who, progress=progress))
        ids.append(result.run_id)
        if on_run:
            on_run("agent" if i == 0 else config.model, result.run_id)
    return ids


def load_agent_study(store: Store, ref: str) -> list[StoredRun]:
    """The finished runs of the agent study ``ref`` (a study id, or the id of any of its runs),
    the agent first. A run outside any study is its own study: the report then says that no
    baseline ran."""
    records = [
        r
        for r in store.list_runs(limit=100_000)
        if (r.config or {}).get("study") == ref and r.status == "finished"
    ]
    if not records:
        run = store.get_run(ref)
        study = (run.config or {}).get("study")
        if not study:
            return [StoredRun(run, tuple(store.get_samples(run.id)))]
        records = [
            r
            for r in store.list_runs(limit=100_000)
            if (r.config or {}).get("study") == study and r.status == "finished"
        ]
    records.sort(key=lambda r: r.created_at)
    return [StoredRun(r, tuple(store.get_samples(r.id))) for r in records]


# -- the report ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcomes:
    """Per item of one task of one run: scored trials and passes (errors left out)."""

    trials: dict[str, int]
    passes: dict[str, int]
    errors: int

    def items(self, keep: Callable[[str], bool] = lambda _i: True) -> list[str]:
        return [i for i in self.trials if self.trials[i] > 0 and keep(i)]


def success_metric(run: StoredRun, task: str, metric: str | None = None) -> str:
    """The pass/fail metric: ``metric`` if given, ``success`` when the scorer reports it,
    else the task's primary metric."""
    ts = run.record.task_summary(task)
    names = list(ts.metrics) if ts else []
    if metric is not None:
        if metric not in names:
            raise ConfigError(
                f"Metric {metric!r} is not among {task}'s metrics ({', '.join(names) or 'none'}).",
                hint="Pick one of those with --metric.",
            )
        return metric
    if "success" in names:
        return "success"
    if ts is None or ts.primary is None:
        raise ConfigError(f"Task {task} of run {run.record.id} has no scored metric.")
    return ts.primary


def outcomes(samples: Sequence[SampleRecord], task: str, metric: str) -> Outcomes:
    trials: dict[str, int] = {}
    passes: dict[str, int] = {}
    errors = 0
    for s in samples:
        if s.task != task:
            continue
        trials.setdefault(s.sample_id, 0)
        passes.setdefault(s.sample_id, 0)
        value = (s.scores or {}).get(metric) if s.error is None else None
        if value is None or math.isnan(value):
            errors += 1
            continue
        if value not in (0.0, 1.0):
            raise ConfigError(
                f"{task}: metric {metric!r} is not pass/fail (item {s.sample_id} scored "
                f"{value:g}); pass^k needs a 0/1 outcome per trial.",
                hint="Choose a pass/fail metric with --metric.",
            )
        trials[s.sample_id] += 1
        passes[s.sample_id] += int(value)
    return Outcomes(trials, passes, errors)


@dataclass(frozen=True)
class Reliability:
    """Success, pass^k and pass@k (k = 1..K) and the flip rate over a set of items."""

    n_items: int
    trials: int
    success: Estimate
    pass_hat_k: dict[int, Estimate]
    pass_at_k: dict[int, Estimate]
    flip_rate: Estimate | None  # None: one trial per item

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "n_items": self.n_items,
            "trials": self.trials,
            "success": self.success.to_dict(),
            "pass_hat_k": {str(k): e.to_dict() for k, e in self.pass_hat_k.items()},
            "pass_at_k": {str(k): e.to_dict() for k, e in self.pass_at_k.items()},
        }
        if self.flip_rate is not None:
            d["flip_rate"] = self.flip_rate.to_dict()
        return d


def reliability(
    o: Outcomes, items: Sequence[str], rng: np.random.Generator, confidence: float
) -> Reliability:
    c = [o.passes[i] for i in items]
    n = [o.trials[i] for i in items]
    hat = pass_hat_k_curve(c, n, rng=rng, confidence=confidence)
    at = pass_at_k_curve(c, n, rng=rng, confidence=confidence)
    k = min(n, default=0)
    return Reliability(
        n_items=len(items),
        trials=k,
        success=hat.get(1, Estimate.empty("none", confidence)),
        pass_hat_k=hat,
        pass_at_k=at,
        flip_rate=flip_rate_estimate(c, n, rng=rng, confidence=confidence) if k >= 2 else None,
    )


@dataclass(frozen=True)
class BaselineResult:
    model: str
    run_id: str
    success: Estimate
    passed: tuple[str, ...]  # items passed in at least one trial
    failed: tuple[str, ...]  # items scored but never passed, or only errored
    errors: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "run_id": self.run_id,
            "success": self.success.to_dict(),
            "passed": list(self.passed),
            "failed": list(self.failed),
            "errors": self.errors,
        }


@dataclass(frozen=True)
class AgentTaskReport:
    task: str
    metric: str
    all_items: Reliability
    valid_items: Reliability | None  # without the invalid items (None: there are none)
    components: dict[str, Estimate]  # every metric: mean over items of per-item trial means
    errors: int
    baselines: dict[str, BaselineResult]
    invalid: tuple[str, ...]  # items a trivial baseline passes
    broken: tuple[str, ...]  # items the oracle does not pass
    oracle: str  # "passed", "failed", "none" (no oracle), "not run"
    mdd: float | None
    between_task_var: float | None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "task": self.task,
            "metric": self.metric,
            "all_items": self.all_items.to_dict(),
            "components": {m: e.to_dict() for m, e in self.components.items()},
            "errors": self.errors,
            "baselines": {k: b.to_dict() for k, b in self.baselines.items()},
            "invalid_items": list(self.invalid),
            "broken_items": list(self.broken),
            "oracle": self.oracle,
        }
        if self.valid_items is not None:
            d["valid_items"] = self.valid_items.to_dict()
        if self.mdd is not None:
            d["min_detectable_difference"] = self.mdd
        if self.between_task_var is not None:
            d["between_task_variance"] = self.between_task_var
        return d


@dataclass(frozen=True)
class AgentReport:
    study: str | None
    agent_run: str
    model: str
    tasks: list[AgentTaskReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    alpha: float = 0.05
    power: float = 0.8

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": self.study,
            "agent_run": self.agent_run,
            "model": self.model,
            "mdd_alpha": self.alpha,
            "mdd_power": self.power,
            "tasks": [t.to_dict() for t in self.tasks],
            "notes": self.notes,
        }


def _baseline(
    run: StoredRun, task: str, metric: str, rng: np.random.Generator, confidence: float
) -> BaselineResult | None:
    if task not in run.record.tasks:
        return None
    o = outcomes(run.samples, task, metric)
    items = o.items()
    rel = reliability(o, items, rng, confidence)
    return BaselineResult(
        model=run.record.model,
        run_id=run.record.id,
        success=rel.success,
        passed=tuple(i for i in items if o.passes[i] > 0),
        failed=tuple(i for i in o.trials if o.passes[i] == 0),
        errors=o.errors,
    )


def _mdd(
    o: Outcomes, items: Sequence[str], success: Estimate, alpha: float, power: float
) -> tuple[float | None, float | None]:
    if not items or success.is_empty:
        return None, None
    c = [o.passes[i] for i in items]
    n = [o.trials[i] for i in items]
    measured = between_task_variance(c, n)
    p = success.value
    var = None if math.isnan(measured) else min(measured, p * (1 - p))
    mdd = min_detectable_difference(
        len(items), min(n), success_rate=p, between_task_var=var, alpha=alpha, power=power
    )
    return mdd, var


def _components(
    samples: Sequence[SampleRecord],
    task: str,
    metrics: Sequence[str],
    rng: np.random.Generator,
    confidence: float,
) -> dict[str, Estimate]:
    """Each metric as the mean over items of the item's mean over its scored trials, with an
    interval over items (as success is)."""
    out: dict[str, Estimate] = {}
    for m in metrics:
        per_item: dict[str, list[float]] = {}
        for s in samples:
            v = (s.scores or {}).get(m) if s.task == task and s.error is None else None
            if v is not None and not math.isnan(v):
                per_item.setdefault(s.sample_id, []).append(v)
        means = np.array([np.mean(v) for v in per_item.values()], dtype=np.float64)
        out[m] = summarize(means, rng=rng, confidence=confidence)
    return out


def _task_report(
    agent: StoredRun,
    others: Sequence[StoredRun],
    task: str,
    metric: str | None,
    seed: int,
    confidence: float,
    alpha: float,
    power: float,
) -> AgentTaskReport:
    m = success_metric(agent, task, metric)
    o = outcomes(agent.samples, task, m)
    rng = derived_rng(seed, task, "agent")
    items = o.items()
    base: dict[str, BaselineResult] = {}
    for run in others:
        b = _baseline(run, task, m, derived_rng(seed, task, run.record.model), confidence)
        if b is not None:
            base.setdefault(run.record.model, b)
    invalid = sorted({i for k in TRIVIAL if k in base for i in base[k].passed})
    oracle = base.get(ORACLE)
    broken: tuple[str, ...] = ()
    if oracle is None:
        state = "not run"
    else:
        broken = tuple(sorted(set(oracle.failed) | (set(o.trials) - set(oracle.passed))))
        state = "failed" if broken else "passed"
    keep = [i for i in items if i not in set(invalid)]
    ts = agent.record.task_summary(task)
    all_rel = reliability(o, items, rng, confidence)
    mdd, var = _mdd(o, items, all_rel.success, alpha, power)
    return AgentTaskReport(
        task=task,
        metric=m,
        all_items=all_rel,
        valid_items=reliability(o, keep, rng, confidence) if invalid else None,
        components=_components(
            agent.samples, task, list(ts.metrics) if ts else [], rng, confidence
        ),
        errors=o.errors,
        baselines=base,
        invalid=tuple(invalid),
        broken=broken,
        oracle=state,
        mdd=mdd,
        between_task_var=var,
    )


def agent_report(
    runs: Sequence[StoredRun],
    *,
    metric: str | None = None,
    seed: int = 0,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
) -> AgentReport:
    """The report of an agent study (:func:`load_agent_study`): the first run is the agent,
    the others its baselines (by model spec)."""
    if not runs:
        raise ConfigError("No runs to report.", hint="calipers agent run -t TASK -m MODEL")
    agent, others = runs[0], runs[1:]
    study = (agent.record.config or {}).get("study")
    notes = []
    models = {r.record.model for r in others}
    missing = [b for b in TRIVIAL if b not in models]
    if missing:
        notes.append(
            f"No {' or '.join(missing)} run in this study: invalid items cannot be flagged "
            "(calipers agent run always runs the baselines)."
        )
    tasks = [
        _task_report(agent, others, t, metric, seed, confidence, alpha, power)
        for t in agent.record.tasks
    ]
    for t in tasks:
        if t.oracle == "not run" and ORACLE not in models:
            notes.append(f"{t.task}: no oracle run (its environment gives no oracle).")
    return AgentReport(
        study=study,
        agent_run=agent.record.id,
        model=agent.record.model,
        tasks=tasks,
        notes=notes,
        alpha=alpha,
        power=power,
    )


def list_agent_studies(store: Store) -> list[dict[str, Any]]:
    """One row per stored agent study (study, agent model, tasks, runs, created_at of its
    first run), newest first."""
    studies: dict[str, dict[str, Any]] = {}
    for r in sorted(store.list_runs(limit=100_000), key=lambda r: r.created_at):
        study = (r.config or {}).get("study") or ""
        if not study.startswith(AGENT_PREFIX):
            continue
        row = studies.setdefault(
            study,
            {
                "study": study,
                "model": r.model,
                "tasks": list(r.tasks),
                "runs": 0,
                "created_at": str(r.created_at),
            },
        )
        row["runs"] += 1
    return sorted(studies.values(), key=lambda row: row["created_at"], reverse=True)

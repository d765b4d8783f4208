"""``calipers errors RUN``: the error taxonomy of a run's failing samples, worst first.

Every failing sample (scored, primary metric below full credit) gets one
:class:`~calipers.types.ErrorLabel`, from the rule of the scorer behind the task's primary
metric (``calipers.scorers.error_rule``) or from a task classifier given by the caller (a
judge's open coding); a failing sample nobody can label is ``unclassified``. Samples whose
model call or scorer failed are not failures: they are counted apart, as everywhere.

Each type's ``share`` (among the failures) and ``rate`` (among all scored samples) is a
Wilson interval; types are sorted by count, the most frequent first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from calipers.analysis._align import StoredRun
from calipers.errors import ConfigError
from calipers.scorers import ErrorRule, ScoredReply, error_rule
from calipers.stats import wilson
from calipers.store import SampleKey, SampleRecord
from calipers.types import ErrorLabel, Estimate

__all__ = [
    "UNCLASSIFIED",
    "ErrorExample",
    "ErrorReport",
    "ErrorTypeRow",
    "TaskClassifier",
    "TaskErrors",
    "error_report",
    "label_task",
    "task_rule",
]

UNCLASSIFIED = "unclassified"
_CLIP = 400

TaskClassifier = Callable[[str, Sequence[SampleRecord]], Mapping[SampleKey, ErrorLabel]]
"""``(task, failing samples) -> label per sample key``: how a caller labels the failures of
a task that has no rule (a judge's open coding); a sample it leaves out is unclassified."""


class ErrorExample(BaseModel):
    model_config = ConfigDict(frozen=True)

    sample_id: str
    epoch: int
    detail: str
    response: str | None
    answer: str | None
    target: str | None


class ErrorTypeRow(BaseModel):
    """One error type of one task: how many failures it holds, its share of the failures
    and its rate among scored samples (Wilson intervals), and examples."""

    model_config = ConfigDict(frozen=True)

    type: str
    method: str
    count: int
    share: Estimate
    rate: Estimate
    examples: list[ErrorExample]


class TaskErrors(BaseModel):
    model_config = ConfigDict(frozen=True)

    task: str
    primary: str | None
    rule: str | None  # the rule that labelled (numeric, choice, code, ifeval), None: no rule
    failing_rule: str
    n_samples: int
    n_scored: int
    n_failed: int
    n_errored: int  # failed calls or scorers: not failures, counted apart
    n_unclassified: int
    failure_rate: Estimate
    types: list[ErrorTypeRow]


class ErrorReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    model: str
    tasks: list[TaskErrors]


# -- labelling ----------------------------------------------------------------------------------


def _primary(run: StoredRun, task: str) -> str | None:
    ts = run.record.task_summary(task)
    if ts is not None and ts.primary:
        return ts.primary
    names = [k for s in run.samples if s.task == task for k in (s.scores or {})]
    return names[0] if names else None


def _value(s: SampleRecord, metric: str) -> float | None:
    v = (s.scores or {}).get(metric) if s.error is None else None
    return None if v is None or math.isnan(v) else float(v)


def scored_samples(run: StoredRun, task: str) -> tuple[str | None, list[SampleRecord]]:
    """The task's primary metric and its scored samples (no error, primary not NaN)."""
    primary = _primary(run, task)
    if primary is None:
        return None, []
    return primary, [s for s in run.samples if s.task == task and _value(s, primary) is not None]


def task_rule(run: StoredRun, task: str) -> ErrorRule | None:
    """The rule of the first of the task's scorers (as the run recorded them) that has one."""
    card = ((run.record.methodology or {}).get("tasks") or {}).get(task) or {}
    scorers = card.get("scorers") if isinstance(card, dict) else None
    names = [str(s.get("name")) for s in scorers or [] if isinstance(s, dict)]
    return error_rule(names) if names else None


def _reply(s: SampleRecord, primary: str) -> ScoredReply:
    params = s.prompt.get("params") if isinstance(s.prompt, dict) else None
    max_tokens = params.get("max_tokens") if isinstance(params, dict) else None
    return ScoredReply(
        sample_id=s.sample_id,
        passed=(_value(s, primary) or 0.0) >= 1.0,
        primary=primary,
        response=s.response,
        answer=s.answer,
        target=s.target,
        scores=dict(s.scores or {}),
        details=dict(s.score_details or {}),
        output_tokens=s.output_tokens,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
    )


def label_task(
    run: StoredRun, task: str, classifier: TaskClassifier | None = None
) -> dict[SampleKey, ErrorLabel]:
    """A label for every failing scored sample of ``task`` (failing: primary metric < 1):
    the task's rule, else ``classifier``, else ``unclassified``."""
    primary, scored = scored_samples(run, task)
    if primary is None:
        return {}
    failing = [s for s in scored if (_value(s, primary) or 0.0) < 1.0]
    rule = task_rule(run, task)
    labels: dict[SampleKey, ErrorLabel] = {}
    if rule is not None:
        replies = [_reply(s, primary) for s in scored]
        for s, lab in zip(scored, rule.classify(replies), strict=True):
            if lab is not None:
                labels[s.key] = lab
    elif classifier is not None and failing:
        labels.update(classifier(task, failing))
    none = ErrorLabel(
        type=UNCLASSIFIED,
        detail="no rule for this task's scorers; a judge's open coding can label it",
    )
    return {s.key: labels.get(s.key, none) for s in failing}


# -- the report --------------------------------------------------------------------------------


def _example(s: SampleRecord, lab: ErrorLabel) -> ErrorExample:
    resp = s.response
    if resp is not None and len(resp) > _CLIP:
        resp = resp[:_CLIP] + f"… ({len(resp):,} characters)"
    return ErrorExample(
        sample_id=s.sample_id,
        epoch=s.epoch,
        detail=lab.detail,
        response=resp,
        answer=s.answer,
        target=s.target,
    )


def _failing_rule(primary: str | None) -> str:
    return f"{primary} < 1" if primary else "no scored metric"


def task_errors(
    run: StoredRun, task: str, *, examples: int = 3, classifier: TaskClassifier | None = None
) -> TaskErrors:
    primary, scored = scored_samples(run, task)
    labels = label_task(run, task, classifier)
    rule = task_rule(run, task)
    by_key = {s.key: s for s in scored}
    counts = Counter(lab.type for lab in labels.values())
    methods = {lab.type: lab.method for lab in labels.values()}
    n_failed, n_scored = len(labels), len(scored)
    rows = []
    for t, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        keys = sorted(
            (key for key, lab in labels.items() if lab.type == t),
            key=lambda key: (by_key[key].position, key[2]),
        )
        rows.append(
            ErrorTypeRow(
                type=t,
                method=methods[t],
                count=k,
                share=wilson(k, n_failed),
                rate=wilson(k, n_scored),
                examples=[_example(by_key[key], labels[key]) for key in keys[:examples]],
            )
        )
    all_task = [s for s in run.samples if s.task == task]
    return TaskErrors(
        task=task,
        primary=primary,
        rule=rule.name if rule else None,
        failing_rule=_failing_rule(primary),
        n_samples=len(all_task),
        n_scored=n_scored,
        n_failed=n_failed,
        n_errored=sum(s.error is not None for s in all_task),
        n_unclassified=counts.get(UNCLASSIFIED, 0),
        failure_rate=wilson(n_failed, n_scored) if n_scored else Estimate.empty("wilson"),
        types=rows,
    )


def error_report(
    run: StoredRun,
    *,
    task: str | None = None,
    examples: int = 3,
    classifier: TaskClassifier | None = None,
) -> ErrorReport:
    """The error taxonomy of every task of ``run`` (or of ``task``), worst type first."""
    tasks = list(run.record.tasks)
    if task is not None:
        if task not in tasks:
            raise ConfigError(
                f"Run {run.record.id} has no task {task!r}.",
                hint=f"Its tasks: {', '.join(tasks) or 'none'}.",
            )
        tasks = [task]
    return ErrorReport(
        run_id=run.record.id,
        model=run.record.model_name,
        tasks=[task_errors(run, t, examples=examples, classifier=classifier) for t in tasks],
    )

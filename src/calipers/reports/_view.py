"""What a report shows, computed from a run's stored data (pure: no I/O, no formatting markup).

Shared by the HTML and Markdown reports and by ``calipers show`` in the terminal, so the three
always agree on which categories are worst, which items failed and what the card says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from calipers.reports._columns import error_keys, failing_keys, failing_rule_of
from calipers.reports._errors import ErrorTypeView, error_views
from calipers.store import RunRecord, SampleRecord
from calipers.types import CallCounts, Estimate, RunSummary, TaskSummary

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = [
    "CategoryView",
    "MetricView",
    "TaskView",
    "calls_text",
    "error_items",
    "failing_items",
    "failing_rule",
    "methodology_rows",
    "metric_view",
    "prompt_text",
    "task_views",
    "worst_categories",
]


def _badness(row: tuple[str, Estimate, int]) -> tuple[bool, float, float, str]:
    name, e, _n = row
    if e.is_empty:
        return (True, 0.0, 0.0, name)
    return (False, e.value, e.high if not math.isnan(e.high) else math.inf, name)


def worst_categories(
    task_summary: TaskSummary | None, k: int = 5, *, metric: str | None = None
) -> list[tuple[str, Estimate, int]]:
    """The ``k`` categories with the lowest value of ``metric`` (the primary metric unless
    given), worst first.

    Each row is ``(category, estimate, n)`` where ``n`` counts the category's samples, errors
    included (``estimate.n`` is the scored ones). Equal values are ordered by the interval's
    upper bound (the surer failure first), then by name; categories with no score (NaN, n=0)
    come last.
    """
    if task_summary is None:
        return []
    m = metric if metric is not None else task_summary.primary
    rows = [
        (name, (c.metrics.get(m) if m is not None else None) or Estimate.empty(), c.n)
        for name, c in task_summary.categories.items()
    ]
    rows.sort(key=_badness)
    return rows[:k]


def _primary_value(record: SampleRecord, primary: str) -> float | None:
    v = (record.scores or {}).get(primary) if record.error is None else None
    return None if v is None or math.isnan(v) else float(v)


def _scored(
    samples: Sequence[SampleRecord], task: str, primary: str
) -> list[tuple[SampleRecord, float]]:
    pairs = [(s, _primary_value(s, primary)) for s in samples if s.task == task]
    return [(s, v) for s, v in pairs if v is not None]


def _order(record: SampleRecord) -> tuple[int, int, str]:
    return (record.position, record.epoch, record.sample_id)


def _unit_scale(values: Sequence[float]) -> bool:
    return all(0.0 <= v <= 1.0 for v in values)


def failing_rule(samples: Sequence[SampleRecord], task: str, primary: str) -> str:
    """How :func:`failing_items` decides, in words: ``acc < 1`` or ``score = min (0.25)``."""
    values = [v for _s, v in _scored(samples, task, primary)]
    if _unit_scale(values):
        return f"{primary} < 1"
    return f"{primary} = min ({min(values):g})"


def failing_items(
    samples: Sequence[SampleRecord], task: str, primary: str, k: int = 10
) -> list[SampleRecord]:
    """Scored samples of ``task`` that did not get full credit, in position order, first ``k``.

    For a metric on the 0–1 scale "failing" is a value below 1; for any other scale it is a
    value equal to the lowest one observed. Errored samples are never failing (they are listed
    by :func:`error_items`), nor are unscorable ones (NaN).
    """
    scored = _scored(samples, task, primary)
    values = [v for _s, v in scored]
    if _unit_scale(values):
        failed = [s for s, v in scored if v < 1.0]
    else:
        failed = [s for s, v in scored if v == min(values)]
    return sorted(failed, key=_order)[:k]


def error_items(samples: Sequence[SampleRecord], task: str, k: int = 10) -> list[SampleRecord]:
    """Samples of ``task`` whose model call or scorer failed, in position order, first ``k``."""
    return sorted((s for s in samples if s.task == task and s.error is not None), key=_order)[:k]


def _messages_text(messages: Sequence[Any]) -> str:
    return "\n".join(
        f"{m.get('role', '?')}: {m.get('content', '')}" if isinstance(m, dict) else str(m)
        for m in messages
    )


def prompt_text(record: SampleRecord) -> str:
    """The prompt as sent, readable: chat messages as ``role: content`` lines, a plain prompt
    as is, a multiple-choice context followed by its numbered options (quoted, since their
    leading spaces matter)."""
    p = record.prompt
    if not isinstance(p, dict):
        return "" if p is None else str(p)
    if p.get("messages"):
        return _messages_text(p["messages"])
    if isinstance(p.get("prompt"), str):
        return str(p["prompt"])
    if "continuations" in p or "rendered" in p or "context" in p:
        head = str(p.get("rendered") or p.get("context") or "")
        options = [
            f"  {i}: {json.dumps(c, ensure_ascii=False)}"
            for i, c in enumerate(p.get("continuations") or [])
        ]
        return "\n".join([head, "options:", *options]) if options else head
    return json.dumps(p, ensure_ascii=False, indent=2, sort_keys=True)


# -- methodology card ---------------------------------------------------------------------------


def _short(h: str | None, n: int = 12) -> str:
    if not h:
        return "not recorded"
    return h if len(h) <= n else f"{h[:n]}…"


def _kv(d: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in d.items())


def _model_rows(m: dict[str, Any], spec: str | None) -> list[tuple[str, str]]:
    rows = [("model", f"{m.get('name', '?')} (provider {m.get('provider', '?')})")]
    if spec:
        rows.append(("model spec", spec))
    if m.get("sha256"):
        rows.append(("file sha256", _short(m["sha256"])))
    for key, label in (("api_model", "API model"), ("base_url", "base URL")):
        if m.get(key):
            rows.append((label, str(m[key])))
    rows.append(("quantization", m.get("quantization") or "not recorded"))
    return rows


def _task_line(name: str, t: dict[str, Any], seed: Any) -> str:
    parts = [f"{name} v{t.get('version', '?')}", str(t.get("kind", "?")), str(t.get("source", "?"))]
    parts.append(f"{t.get('n_items', '?')} items")
    if t.get("dynamic"):
        parts.append(f"dynamic, seed {t.get('seed', seed)}")  # a task's own: older cards
    if t.get("limit") is not None:
        parts.append(f"limit {t['limit']}")
    return " · ".join(parts)


def _formulation(t: dict[str, Any]) -> str:
    fallback = t.get("formulation_fallback")
    return f"{t['formulation']} (fallback: {fallback})" if fallback else str(t["formulation"])


def _task_rows(name: str, t: dict[str, Any], seed: Any = None) -> list[tuple[str, str]]:
    template = {k: v for k, v in (t.get("prompt_template") or {}).items() if v}
    chat = t.get("chat_template")
    shots = int(t.get("few_shot") or 0)
    scorers = [f"{s.get('name', '?')}({_kv(s.get('args') or {})})" for s in t.get("scorers", [])]
    system = t.get("system_prompt")
    formulation = [("formulation", _formulation(t))] if t.get("formulation") else []
    return [
        ("task", _task_line(name, t, seed)),
        *formulation,
        ("data hash", _short(t.get("data_hash"), 16)),
        ("prompt hash", _short(t.get("prompt_hash"), 16)),
        ("prompt template", _kv(template) or "none"),
        ("chat template", f"on · {_short(t.get('chat_template_hash'))}" if chat else "off"),
        ("system prompt", json.dumps(system, ensure_ascii=False) if system else "none"),
        ("few-shot", f"k={shots}, seed={t.get('few_shot_seed')}" if shots else "k=0 (zero-shot)"),
        ("decoding", _kv(t.get("decoding") or {}) or "not recorded"),
        ("scorers", ", ".join(scorers) or "none"),
    ]


def calls_text(calls: CallCounts | None, *, short: bool = False) -> str:
    """Retried model calls in words ("" for runs summarized before they were counted);
    ``short`` for a table cell: ``"3 (1 rate-limited, 4.5s waited)"``, ``"0"``, ``"-"``."""
    if not calls:
        return "-" if short else ""
    if not calls.retries:
        return "0" if short else "no retries"
    limited = calls.rate_limited
    waited = calls.wait_s
    if short:
        parts = [f"{limited} rate-limited"] if limited else []
        return f"{calls.retries} ({', '.join([*parts, f'{waited:.1f}s waited'])})"
    rl = f", {limited} rate-limited (HTTP 429)" if limited else ""
    samples = calls.samples_retried
    return (
        f"{calls.retries} retries on {samples} sample{'s' if samples != 1 else ''}"
        f"{rl}; {waited:.1f} s waiting between attempts"
    )


def methodology_rows(
    methodology: dict[str, Any], summary: RunSummary | None = None
) -> list[tuple[str, str]]:
    """Label/value rows of the methodology card. With several tasks, each task's rows are
    labelled ``"<task> · <label>"``; missing fields read "not recorded". With the run's
    ``summary``, a row says how many model calls were retried: a latency is its successful
    attempt's alone, without the failed attempts and waits before it."""
    m = methodology or {}
    rows = _model_rows(m.get("model") or {}, m.get("model_spec"))
    if m.get("model_runtime"):  # e.g. llama.cpp's thread counts
        rows.append(("model runtime", _kv(m["model_runtime"])))
    tasks: dict[str, dict[str, Any]] = m.get("tasks") or {}
    seeds = m.get("seeds") or {}
    for name, t in tasks.items():
        task_rows = _task_rows(name, t, seeds.get("items"))
        rows += task_rows if len(tasks) == 1 else [(f"{name} · {k}", v) for k, v in task_rows]
    if seeds:
        rows.append(("seeds", _kv(seeds)))
    conf = m.get("confidence")
    packages = m.get("packages") or {}
    rows += [
        ("confidence", f"{100 * conf:g}%" if isinstance(conf, int | float) else "not recorded"),
        ("calipers version", str(m.get("calipers_version") or "not recorded")),
        ("git revision", str(m.get("git_revision") or "not recorded")),
        ("packages", ", ".join(f"{k} {v}" for k, v in packages.items()) or "not recorded"),
        ("recorded at", str(m.get("created_at") or "not recorded")),
    ]
    calls = calls_text(summary.calls if summary is not None else None)
    if calls:
        rows.append(
            (
                "model calls",
                f"{calls} (latencies are of the successful attempt)"
                if calls != "no retries"
                else calls,
            )
        )
    return rows


# -- per-task view ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetricView:
    """A metric's estimate with its display string and, on the 0–1 scale, the interval bar
    as ``(low, value, high)`` in percent of the bar's width."""

    name: str
    estimate: Estimate
    text: str
    bar: tuple[float, float, float] | None


@dataclass(frozen=True, slots=True)
class CategoryView:
    name: str
    n: int
    n_errors: int
    metric: MetricView


@dataclass(frozen=True, slots=True)
class TaskView:
    name: str
    version: str
    summarized: bool
    primary: MetricView | None
    metrics: tuple[MetricView, ...]
    categories: tuple[CategoryView, ...]  # all of them, worst first
    n_samples: int
    n_scored: int
    n_errors: int
    n_cached: int
    latency: str
    input_tokens: int
    output_tokens: int
    error_kinds: tuple[str, ...]
    top_error: str  # "12× message", or "" without errors
    retries: str  # calls_text of the task's calls, "" when not counted
    retries_cell: str  # the same for a table cell: "0", "3 (1 rate-limited, 4.5s waited)", "-"
    failing: tuple[SampleRecord, ...]
    n_failing: int
    failing_rule: str
    errors: tuple[SampleRecord, ...]
    judge: str | None = None  # a judge-scored task: the judge's measured agreement with people
    n_tampering: int = 0  # samples a scorer flagged for tampering (scored as failures)
    tampering_kinds: tuple[str, ...] = ()
    error_types: tuple[ErrorTypeView, ...] = ()  # why the failing items failed, worst first


def metric_view(name: str, est: Estimate) -> MetricView:
    ends = (est.low, est.value, est.high)
    on_scale = not est.is_empty and all(0.0 <= x <= 1.0 for x in ends)  # False for NaN
    bar = (100 * est.low, 100 * est.value, 100 * est.high) if on_scale else None
    return MetricView(name, est, est.format(percent=True), bar)


def _latency(est: Estimate) -> str:
    return est.format() if est.is_empty else f"{est.format(digits=2)} s (n={est.n}, {est.method})"


def _unsummarized_view(name: str, version: str, src: StoredRun, k: int) -> TaskView:
    """A task not yet summarized: counts from its stored samples, no scores."""
    cols = src.columns(name)
    n_err = int((~cols.ok).sum())
    return TaskView(
        name=name,
        version=version,
        summarized=False,
        primary=None,
        metrics=(),
        categories=(),
        n_samples=len(cols),
        n_scored=len(cols) - n_err,
        n_errors=n_err,
        n_cached=int(cols.cached.sum()),
        latency=_latency(Estimate.empty()),
        input_tokens=0,
        output_tokens=0,
        error_kinds=(),
        top_error="",
        retries=calls_text(None),
        retries_cell=calls_text(None, short=True),
        failing=(),
        n_failing=0,
        failing_rule="",
        errors=tuple(src.records_at(name, error_keys(cols, k))),
    )


def _task_view(name: str, version: str, s: TaskSummary | None, src: StoredRun, k: int) -> TaskView:
    """Counts and the items to list come from the task's columns; only the ``k`` failing and
    ``k`` errored records shown are read whole."""
    if s is None:
        return _unsummarized_view(name, version, src, k)
    primary = s.primary if s.primary in s.metrics else None
    metrics = tuple(metric_view(m, e) for m, e in s.metrics.items())
    categories = tuple(
        CategoryView(c, n, s.categories[c].n_errors, metric_view(str(primary), est))
        for c, est, n in worst_categories(s, k=len(s.categories))
    )
    cols = src.columns(name)
    failing = failing_keys(cols, primary) if primary else []
    return TaskView(
        name=name,
        version=version,
        summarized=True,
        primary=next((m for m in metrics if m.name == primary), None),
        metrics=metrics,
        categories=categories,
        n_samples=s.n_samples,
        n_scored=s.n_scored,
        n_errors=s.n_errors,
        n_cached=s.n_cached,
        latency=_latency(s.latency_s),
        input_tokens=s.input_tokens,
        output_tokens=s.output_tokens,
        error_kinds=s.errors,
        top_error=f"{top.count}× {top.message}" if (top := s.top_error) else "",
        retries=calls_text(s.calls),
        retries_cell=calls_text(s.calls, short=True),
        failing=tuple(src.records_at(name, failing[:k])),
        n_failing=len(failing),
        failing_rule=failing_rule_of(cols, primary) if primary else "",
        errors=tuple(src.records_at(name, error_keys(cols, k))),
        n_tampering=s.n_tampering,
        tampering_kinds=s.tampering,
    )


def task_views(
    run: RunRecord,
    samples: Sequence[SampleRecord] | StoredRun,
    k: int = 10,
    *,
    saved: Sequence[RunRecord] = (),
) -> list[TaskView]:
    """One view per task of ``run``, in run order; ``k`` caps failing and error items shown.
    ``samples``: the run's records, or its ``StoredRun`` (then only the records shown are
    read). A judge-scored task's ``judge`` line says its calibration, found in ``run`` or in
    the ``saved`` runs (e.g. the whole store), or that it is uncalibrated."""
    summary = run.summary.tasks if run.summary is not None else {}
    cards = (run.methodology or {}).get("tasks") or {}
    names = list(run.tasks) + [t for t in summary if t not in run.tasks]
    from calipers.analysis import StoredRun, judge_agreement_line

    src = samples if isinstance(samples, StoredRun) else StoredRun(run, tuple(samples))
    kinds = error_views(run, src)
    return [
        replace(
            _task_view(t, str((cards.get(t) or {}).get("version", "?")), summary.get(t), src, k),
            judge=judge_agreement_line(run, t, saved),
            error_types=kinds.get(t, ()) if t in summary else (),  # no scores, no shares
        )
        for t in names
    ]

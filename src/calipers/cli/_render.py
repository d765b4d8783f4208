"""Terminal tables: a number is never printed without its interval, n and method."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from calipers.types import Estimate, RunSummary, TaskSummary

__all__ = ["summary_table"]


def _pct(e: Estimate) -> tuple[str, str]:
    if e.is_empty:
        return "n/a", "(n=0)"
    return f"{100 * e.value:.1f}%", f"[{100 * e.low:.1f}, {100 * e.high:.1f}]"


def _num(e: Estimate) -> tuple[str, str]:
    if e.is_empty:
        return "n/a", "(n=0)"
    return f"{e.value:.3g}", f"[{e.low:.3g}, {e.high:.3g}]"


ERROR_CHARS = 140  # of the commonest error message, in the table


def _top_error(ts: TaskSummary) -> str:
    top = ts.top_error
    if not top:
        return ""
    msg = top.message.split("\n")[0]  # the message, not the hint under it
    msg = msg if len(msg) <= ERROR_CHARS else msg[: ERROR_CHARS - 1] + "…"
    every = ts.n_errors == ts.n_samples
    return f"[red]{'all ' if every else ''}{top.count}×[/] {escape(msg)}"


def judge_scored(scorers: Iterable[Iterable[Mapping[str, Any]]]) -> bool:
    """Whether a model judge is among the tasks' scorers (one list of scorer specs per task),
    read without importing calipers.analysis."""
    judges = (  # analysis.JUDGE_SCORERS
        "llm_judge",
        "llm_judge_pairwise",
        "rag_faithfulness",
        "mt_bench_judge",
        "self_contradiction",
    )
    return any(
        s.get("name") in judges and (s.get("args") or {}).get("judge") is not None
        for t in scorers
        for s in t
    )


def judge_marks(run: Any, saved: Callable[[], Sequence[Any]]) -> dict[str, str]:
    """Task -> the mark its score gets: "uncalibrated" when a model judge gave the task's
    primary score and no calibration against people is on record in ``run`` or the runs
    ``saved()`` returns (called, and ``calipers.analysis`` loaded, only for a run a judge
    scored)."""
    tasks = run.methodology.get("tasks", {})
    if not judge_scored(t.get("scorers", []) for t in tasks.values()) or run.summary is None:
        return {}
    from calipers.analysis import is_judge_metric, judge_calibrations

    marks = {}
    for task, status in judge_calibrations(run, saved()).items():
        ts = run.summary.tasks.get(task)
        primary = ts.primary if ts is not None else None
        if not status["calibrated"] and primary and is_judge_metric(primary, status):
            marks[task] = "[yellow](uncalibrated)[/]"
    return marks


def summary_table(
    summary: RunSummary, *, title: str | None = None, marks: Mapping[str, str] | None = None
) -> Table:
    """The run's scores, one row per task; ``marks`` (task -> rich text) follows the metric's
    name, e.g. "(uncalibrated)" for a judge's score that no one has checked against people."""
    from calipers.reports import calls_text  # the reports' wording; jinja2 only when drawn

    t = Table(title=title, title_justify="left", header_style="bold")
    tasks = summary.tasks
    any_errors = any(ts.top_error for ts in tasks.values())
    for col, kw in [
        ("task", {}),
        ("metric", {}),
        ("n", {"justify": "right"}),
        ("score", {"justify": "right"}),
        ("95% interval", {"justify": "right"}),
        ("method", {}),
        ("errors", {"justify": "right"}),
        ("retries", {"justify": "right"}),
        ("mean latency", {"justify": "right"}),
        ("tokens in/out", {"justify": "right"}),
    ] + ([("commonest error", {})] if any_errors else []):
        t.add_column(col, **kw)  # type: ignore[arg-type]
    for task, ts in tasks.items():
        tail = [_top_error(ts)] if any_errors else []
        retries = calls_text(ts.calls, short=True)
        primary = ts.primary
        if primary is None:
            t.add_row(
                task,
                "-",
                str(ts.n_samples),
                "n/a",
                "",
                "",
                str(ts.n_errors),
                retries,
                "",
                "",
                *tail,
            )
            continue
        est = ts.metrics[primary]
        binary = est.method.startswith(("wilson", "beta"))
        value, interval = _pct(est) if binary or _is_fraction(est) else _num(est)
        lat = ts.latency_s
        t.add_row(
            task,
            f"{primary} {marks[task]}" if marks and task in marks else primary,
            str(est.n),
            value,
            interval,
            est.method,
            f"[red]{ts.n_errors}[/]" if ts.n_errors else "0",
            retries,
            "n/a" if lat.is_empty else f"{lat.value:.2f}s [{lat.low:.2f}, {lat.high:.2f}]",
            f"{ts.input_tokens:,}/{ts.output_tokens:,}",
            *tail,
        )
    return t


def _is_fraction(e: Estimate) -> bool:
    return e.low >= 0.0 and e.high <= 1.0

"""The Markdown report: the HTML report's content as GitHub-flavoured Markdown.

Table cells have pipes escaped and line breaks flattened; model text is quoted inside code
fences (so Markdown in it is shown, not rendered) and long text is cut with the cut stated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from calipers.reports._html import confidence_label, score, when
from calipers.reports._steps import episode_text
from calipers.reports._view import (
    MetricView,
    TaskView,
    methodology_rows,
    prompt_text,
    task_views,
)
from calipers.store import RunRecord, SampleRecord

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = ["MD_TEXT", "Extra", "cell", "code", "render_markdown", "table"]

MD_TEXT = 400
"""Longest prompt or response quoted in full; a prompt keeps its end, a response its start."""

Extra = Callable[[TaskView], list[str]]
"""Lines added to a task's section (the multi-run report adds the score distribution)."""


def cell(text: object) -> str:
    """A value made safe for one GFM table cell."""
    s = " ".join(str(text).split())
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def code(text: str) -> str:
    """``text`` as inline code, fenced with enough backticks."""
    s = " ".join(text.split()) or " "
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[0] == "`" or s[-1] == "`" else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str) -> list[str]:
    sep = {"l": "---", "r": "--:"}
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(sep[a] for a in align) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return [*out, ""]


def _clip(text: str, keep_end: bool) -> tuple[str, str]:
    if len(text) <= MD_TEXT:
        return text, ""
    if keep_end:
        return "…" + text[-MD_TEXT:], f" (truncated: last {MD_TEXT} of {len(text):,} characters)"
    return text[:MD_TEXT] + "…", f" (truncated: first {MD_TEXT} of {len(text):,} characters)"


def _quoted(label: str, text: str | None, keep_end: bool = False) -> list[str]:
    if text is None:
        return [f"> **{label}:** (none)", ">"]
    body, note = _clip(text, keep_end)
    fence = "`" * max(3, max((len(r) for r in re.findall(r"`{3,}", body)), default=0) + 1)
    lines = [f"> **{label}**{note}:", f"> {fence}text"]
    lines += [f"> {line}" for line in body.splitlines() or [""]]
    return [*lines, f"> {fence}", ">"]


def _item(s: SampleRecord, metric: str | None) -> list[str]:
    head = f"**#{s.position}** {code(s.sample_id)}"
    if s.category:
        head += f" · {code(s.category)}"
    steps = episode_text(s, limit=400)
    episode = _quoted("steps", steps) if steps else []
    if s.error is not None:
        return [
            head,
            "",
            *_quoted("error", s.error),
            *_quoted("prompt", prompt_text(s), True),
            *episode,
            "",
        ]
    if metric:
        head += f" · {metric} = {score(s, metric)}"
    lines = [
        head,
        "",
        *_quoted("prompt", prompt_text(s), True),
        *_quoted("response", s.response),
        *episode,
    ]
    answer = code(s.answer) if s.answer is not None else "(none)"
    target = code(s.target) if s.target is not None else "(none)"
    return [*lines, f"> **parsed answer:** {answer} · **target:** {target}", ""]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _errors_text(n: int) -> str:
    return f"{_plural(n, 'error')} excluded" if n else "none"


def _summary_row(t: TaskView) -> list[object]:
    p = t.primary
    n = f"{p.estimate.n} of {t.n_samples}" if p else str(t.n_samples)
    return [
        t.name,
        n,
        p.name if p else "—",
        p.text if p else "n/a (n=0)",
        p.estimate.method if p else "—",
        _errors_text(t.n_errors),
        t.retries_cell,
        t.n_cached,
        t.latency,
        f"{t.input_tokens} / {t.output_tokens}",
    ]


def _header(run: RunRecord, title: str | None = None) -> list[str]:
    elapsed = run.summary.elapsed_s if run.summary else None
    times = f"started {when(run.created_at)}"
    times += f" · finished {when(run.finished_at)}" if run.finished_at else ""
    times += f" · {elapsed:.1f} s" if isinstance(elapsed, int | float) else ""
    lines = [
        f"# {cell(title or run.model_name)}",
        "",
        f"run {code(run.id)} · model spec {code(run.model)} · status **{run.status}**  ",
        times,
        "",
    ]
    if run.status != "finished":
        why = f": {cell(run.error)}" if run.error else ""
        state = (
            "has no summary yet, so no scores are shown"
            if not run.summary
            else ("its scores cover the samples stored when it was summarized")
        )
        lines += [f"> **Note:** this run is {run.status}{why}; {state}.", ""]
    return lines


def _metric_rows(ms: Sequence[MetricView], primary: str | None) -> list[list[object]]:
    return [
        [
            m.name + (" (primary)" if m.name == primary else ""),
            m.text,
            m.estimate.n,
            m.estimate.method,
        ]
        for m in ms
    ]


def _task(t: TaskView, extra: Extra | None = None) -> list[str]:
    primary = t.primary.name if t.primary else None
    errs = _errors_text(t.n_errors) if t.n_errors else "no errors"
    out = [f"## {cell(t.name)} v{cell(t.version)}", ""]
    if not t.summarized:
        out += ["> No summary for this task yet.", ""]
    out += [f"{t.n_samples} samples: {t.n_scored} scored, {errs}, {t.n_cached} from the cache.", ""]
    if t.retries:
        out += [f"Model calls: {cell(t.retries)}.", ""]
    if t.n_tampering:
        out += [
            f"> **Tampering:** {_plural(t.n_tampering, 'sample')} tried to pass without their "
            f"tests running ({', '.join(t.tampering_kinds)}); scored as failures.",
            "",
        ]
    out += ["### Metrics", ""]
    out += table(
        ["metric", "value [interval]", "n", "method"], _metric_rows(t.metrics, primary), "llrl"
    )
    if t.judge:
        out += [f"Judge-based scores: {cell(t.judge)}.", ""]
    if t.categories:
        out += [f"### By category (worst first, {primary or 'primary metric'})", ""]
        rows = [
            [
                c.name,
                c.metric.text,
                f"{c.metric.estimate.n} of {c.n}",
                c.n_errors,
                c.metric.estimate.method,
            ]
            for c in t.categories
        ]
        out += table(
            ["category", "value [interval]", "n scored", "errors", "method"], rows, "llrrl"
        )
    out += extra(t) if extra else []
    if t.error_types:
        out += ["### Error types (worst first)", ""]
        out += [
            "Why the failing items failed, by the task's rule (`calipers errors RUN`; "
            "docs/errors.md): share of the failures and rate among scored items, 95% Wilson.",
            "",
        ]
        out += table(
            ["error type", "count", "share of failures", "rate among scored", "e.g."],
            [[e.type, e.count, e.share, e.rate, e.example[:160]] for e in t.error_types],
            "lrrrl",
        )
    out += ["### Failing items", ""]
    if t.n_failing:
        shown = (
            f"; the first {len(t.failing)} in position order are shown"
            if (t.n_failing > len(t.failing))
            else ""
        )
        of = t.primary.estimate.n if t.primary else t.n_scored
        out += [f"{t.n_failing} of {of} scored items fail ({t.failing_rule}){shown}.", ""]
        for s in t.failing:
            out += _item(s, primary)
    else:
        out += ["No scored item fails." if t.n_scored else "No scored items.", ""]
    out += ["### Errors", ""]
    if t.n_errors:
        kinds = f" (kinds: {', '.join(t.error_kinds)})" if t.error_kinds else ""
        shown = f"; the first {len(t.errors)} are shown" if t.n_errors > len(t.errors) else ""
        out += [f"{_plural(t.n_errors, 'error')}, excluded from every score{kinds}{shown}.", ""]
        out += [f"Commonest: {code(t.top_error)}", ""] if t.top_error else []
        for s in t.errors:
            out += _item(s, None)
    else:
        out += ["No errors.", ""]
    return out


def render_markdown(
    run: RunRecord,
    samples: Sequence[SampleRecord] | StoredRun,
    k: int = 10,
    *,
    extra: Extra | None = None,
    title: str | None = None,
    saved: Sequence[RunRecord] = (),
) -> str:
    """The whole report as one Markdown document; ``extra(task)`` adds lines to each task's
    section after its categories, and ``title`` replaces the model name as the heading."""
    tasks = task_views(run, samples, k=k, saved=saved)
    conf = confidence_label(run.methodology)
    out = _header(run, title)
    out += [
        "## Summary",
        "",
        f"Every score is value [{conf} interval] with n scored and the "
        "interval method. Errored samples are excluded from scores and counted separately, "
        "never as wrong.",
        "",
    ]
    out += table(
        [
            "task",
            "n",
            "metric",
            "score",
            "method",
            "errors",
            "retries",
            "cached",
            "mean latency",
            "tokens in / out",
        ],
        [_summary_row(t) for t in tasks],
        "lrlllllrlr",
    )
    for t in tasks:
        out += _task(t, extra)
    out += [
        "## Methodology",
        "",
        "What these numbers were computed with. Runs whose methodology differs are not comparable.",
        "",
    ]
    out += table(["field", "value"], methodology_rows(run.methodology, run.summary), "ll")
    out += [f"<sub>calipers {cell(run.calipers_version)} · run {cell(run.id)}</sub>", ""]
    return "\n".join(out)

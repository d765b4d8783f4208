"""``calipers report RUN...``: one report over one or several stored runs.

One run: the run report plus each task's per-item score distribution. Several runs: per task
a forest plot of every run's score with its interval, the categories across runs worst first,
each run's per-item distribution and the items every run gets wrong; the methodology cards
side by side; and, given a comparison, the paired differences with their verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calipers._util.home import make_folder
from calipers._util.private import write_private_text
from calipers.errors import ConfigError
from calipers.reports._html import (
    clip,
    confidence_label,
    score,
    template,
    when,
)
from calipers.reports._multi_md import render_multi_markdown, single_markdown
from calipers.reports._multi_view import MAX_FAILED, card_rows
from calipers.reports._panels import (
    diff_panels,
    diff_text,
    dist_text,
    num,
    score_text,
    task_panels,
)
from calipers.reports._view import methodology_rows, prompt_text, task_views

if TYPE_CHECKING:
    from calipers.analysis import ComparisonSet, StoredRun
    from calipers.store import RunRecord

__all__ = ["default_title", "render_multi_html", "write_multi_report"]


def default_title(runs: Sequence[StoredRun]) -> str:
    names = [r.record.model_name for r in runs]
    if len(runs) == 1:
        return names[0]
    if len(runs) == 2:
        return f"{names[0]} vs {names[1]}"
    return f"{len(runs)} runs: {', '.join(names)}"


def _single_html(run: StoredRun, title: str, saved: Sequence[RunRecord] = ()) -> str:
    record = run.record
    panels = {p.name: p for p in task_panels([run])}
    return template("multi_one.html.j2").render(
        run=record,
        tasks=task_views(record, run, saved=saved),
        card=methodology_rows(record.methodology, record.summary),
        elapsed=record.summary.elapsed_s if record.summary else None,
        confidence=confidence_label(record.methodology),
        title=title,
        panels=panels,
        when=when,
        clip=clip,
        score=score,
        prompt_text=prompt_text,
        dist_text=dist_text,
    )


def _context(
    runs: Sequence[StoredRun], comparison: ComparisonSet | None, title: str
) -> dict[str, Any]:
    return {
        "title": title,
        "runs": runs,
        "panels": task_panels(runs),
        "comparison": comparison,
        "diffs": diff_panels(comparison) if comparison else [],
        "cards": card_rows(runs),
        "confidence": confidence_label(runs[0].record.methodology),
        "version": runs[0].record.calipers_version,
        "max_failed": MAX_FAILED,
        "when": when,
        "score_text": score_text,
        "diff_text": diff_text,
        "dist_text": dist_text,
        "num": num,
    }


def render_multi_html(
    runs: Sequence[StoredRun],
    *,
    comparison: ComparisonSet | None = None,
    title: str | None = None,
    saved: Sequence[RunRecord] = (),
) -> str:
    """The whole report as one self-contained HTML document (``saved``: runs whose stored
    judge calibrations count for a single run's report; see ``task_views``)."""
    if not runs:
        raise ConfigError("A report needs at least one run.", hint="calipers report RUN")
    if len(runs) == 1 and comparison is None:
        return _single_html(runs[0], title or default_title(runs), saved)
    return template("multi.html.j2").render(
        _context(runs, comparison, title or default_title(runs))
    )


def write_multi_report(
    runs: Sequence[StoredRun],
    out_dir: Path,
    *,
    comparison: ComparisonSet | None = None,
    title: str | None = None,
    saved: Sequence[RunRecord] = (),
) -> tuple[Path, Path]:
    """Write ``report-<first run id>[-vs-N].html`` and ``.md`` into ``out_dir`` (created if
    needed), N being the number of runs after the first, and return both paths."""
    if not runs:
        raise ConfigError("A report needs at least one run.", hint="calipers report RUN")
    out = make_folder(Path(out_dir), "the report folder", private=True)
    stem = f"report-{runs[0].record.id}" + (f"-vs-{len(runs) - 1}" if len(runs) > 1 else "")
    html_path, md_path = out / f"{stem}.html", out / f"{stem}.md"
    html = render_multi_html(runs, comparison=comparison, title=title, saved=saved)
    write_private_text(html_path, html)
    if len(runs) == 1 and comparison is None:
        md = single_markdown(runs[0], title, saved)
    else:
        md = render_multi_markdown(runs, comparison=comparison, title=title or default_title(runs))
    write_private_text(md_path, md)  # 0600, as the store: sandboxed code runs here too
    return html_path, md_path

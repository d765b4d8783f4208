"""Run reports: one self-contained HTML file and the same content as Markdown.

A report only reads what it is given (a run record and its sample records); it computes no
new statistics. ``calipers run`` writes one at the end of a run::

    from calipers.reports import write_report
    html_path, md_path = write_report(run, samples, Path("reports"))

``calipers report RUN...`` writes one over several runs (forest plots, categories across runs,
per-item distributions, items every run fails, and the paired comparison when given)::

    from calipers.reports import write_multi_report
    html_path, md_path = write_multi_report(runs, Path("reports"), comparison=result)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from calipers._util.home import make_folder
from calipers._util.lazy import lazy_exports
from calipers._util.private import write_private_text
from calipers.reports._axis import (
    Axis,
    count_axis,
    diff_axis,
    nice_step,
    score_axis,
    unit_scale,
)
from calipers.reports._html import clip, render_html, when
from calipers.reports._markdown import render_markdown
from calipers.reports._steps import StepView, episode_steps, episode_text
from calipers.reports._svg import PlotRow, interval_svg
from calipers.reports._view import (
    TaskView,
    calls_text,
    error_items,
    failing_items,
    methodology_rows,
    prompt_text,
    task_views,
    worst_categories,
)
from calipers.store import RunRecord, SampleRecord

if TYPE_CHECKING:  # the multi-run report loads on first use: a run writes only its own
    from calipers.analysis import StoredRun
    from calipers.reports._multi import render_multi_html, write_multi_report
    from calipers.reports._panels import diff_panels, diff_text, num
    from calipers.reports._rag import (
        OUTCOME_NAMES,
        fill_curve_svg,
        knee_text,
        outcome_name,
        outcomes_shown,
        pct,
        pts,
        render_rag_html,
        render_rag_markdown,
        write_rag_report,
    )

__all__ = [
    "OUTCOME_NAMES",
    "Axis",
    "PlotRow",
    "StepView",
    "TaskView",
    "calls_text",
    "clip",
    "count_axis",
    "diff_axis",
    "diff_panels",
    "diff_text",
    "episode_steps",
    "episode_text",
    "error_items",
    "failing_items",
    "fill_curve_svg",
    "interval_svg",
    "knee_text",
    "methodology_rows",
    "nice_step",
    "num",
    "outcome_name",
    "outcomes_shown",
    "pct",
    "prompt_text",
    "pts",
    "render_html",
    "render_markdown",
    "render_multi_html",
    "render_rag_html",
    "render_rag_markdown",
    "score_axis",
    "task_views",
    "unit_scale",
    "when",
    "worst_categories",
    "write_multi_report",
    "write_rag_report",
    "write_report",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "diff_panels": "_panels",
        "diff_text": "_panels",
        "num": "_panels",
        "render_multi_html": "_multi",
        "write_multi_report": "_multi",
        "fill_curve_svg": "_rag",
        "OUTCOME_NAMES": "_rag",
        "knee_text": "_rag",
        "outcome_name": "_rag",
        "outcomes_shown": "_rag",
        "pct": "_rag",
        "pts": "_rag",
        "render_rag_html": "_rag",
        "render_rag_markdown": "_rag",
        "write_rag_report": "_rag",
    },
)


def write_report(
    run: RunRecord, samples: Sequence[SampleRecord] | StoredRun, out_dir: Path
) -> tuple[Path, Path]:
    """Write ``<out_dir>/<run.id>.html`` and ``<out_dir>/<run.id>.md`` (creating ``out_dir``)
    and return both paths. ``samples``: the run's records, or its ``StoredRun`` (then only
    the records the report lists are read)."""
    out = make_folder(Path(out_dir), "the report folder", private=True)
    html_path, md_path = out / f"{run.id}.html", out / f"{run.id}.md"
    write_private_text(html_path, render_html(run, samples))  # 0600, as the store
    write_private_text(md_path, render_markdown(run, samples))
    return html_path, md_path

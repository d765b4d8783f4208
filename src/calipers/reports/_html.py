"""The HTML report: one self-contained file (inline CSS, inline SVG, no script, no network).

Everything a model or a dataset wrote is escaped by Jinja's autoescape; collapsing uses
``<details>``, which needs no JavaScript.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import jinja2

from calipers._util.home import calipers_home, make_folder
from calipers.errors import CalipersError
from calipers.reports._steps import episode_steps
from calipers.reports._view import methodology_rows, prompt_text, task_views
from calipers.store import RunRecord, SampleRecord

if TYPE_CHECKING:
    from calipers.analysis import StoredRun

__all__ = [
    "MAX_TEXT",
    "clip",
    "confidence_label",
    "environment",
    "render_html",
    "score",
    "template",
    "when",
]

MAX_TEXT = 20_000
"""Longest prompt or response shown in full; longer ones are cut, and the cut is stated."""


def _load(name: str) -> str:
    return resources.files("calipers.reports").joinpath("templates", name).read_text("utf-8")


@cache
def environment() -> jinja2.Environment:
    """The reports' Jinja environment: autoescaped, strict, templates from the package, their
    compiled code kept in the calipers home (compiling the report template took ~60 ms of
    every run; Jinja keys the cache by the template's source, so an edit recompiles)."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.globals["episode_steps"] = episode_steps  # every report shows an episode's steps
    return env


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        folder = make_folder(
            calipers_home() / "cache" / "templates", "the template cache", private=True
        )
    except CalipersError:  # an unwritable home: compile every time
        return None
    return jinja2.FileSystemBytecodeCache(str(folder))


def template(name: str) -> jinja2.Template:
    return environment().get_template(name)


def when(value: datetime | str | None) -> str:
    """A stored time as ``2024-05-01 12:00:03 UTC``."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return value.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def clip(text: str | None, limit: int = MAX_TEXT) -> str:
    if text is None:
        return ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters not shown]"


def score(record: SampleRecord, metric: str) -> str:
    v = (record.scores or {}).get(metric)
    return "n/a" if v is None or math.isnan(v) else f"{v:g}"


def confidence_label(methodology: dict[str, Any]) -> str:
    c = (methodology or {}).get("confidence")
    return f"{100 * c:g}%" if isinstance(c, int | float) else "95%"


def render_html(
    run: RunRecord,
    samples: Sequence[SampleRecord] | StoredRun,
    k: int = 10,
    *,
    saved: Sequence[RunRecord] = (),
) -> str:
    """The whole report as one HTML document (``saved``: runs whose stored judge
    calibrations count, see :func:`task_views`)."""
    return template("report.html.j2").render(
        run=run,
        tasks=task_views(run, samples, k=k, saved=saved),
        card=methodology_rows(run.methodology, run.summary),
        elapsed=run.summary.elapsed_s if run.summary else None,
        confidence=confidence_label(run.methodology),
        when=when,
        clip=clip,
        score=score,
        prompt_text=prompt_text,
    )

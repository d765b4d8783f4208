"""Dashboard sections computed from the gateway's traffic: the A/B status and monitoring.

A section is a navigation entry with a page at ``/<key>`` and its JSON at ``/api/<key>``.
A builder reads the store and the query parameters (a multi-dict: repeated parameters through
:func:`param_values`) and returns a :class:`SectionPage`: a template of this package (which
extends ``section.html.j2``), its context, and the same content as JSON. Calipers ships one
per section (:data:`BUILTIN_BUILDERS`: ``calipers.web._ab_page``, ``calipers.web._monitor_page``);
``create_app(store, sections={"monitor": my_page})`` replaces one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from calipers.errors import ConfigError
from calipers.store import Store

__all__ = [
    "BUILTIN_BUILDERS",
    "SECTIONS",
    "Section",
    "SectionBuilder",
    "SectionPage",
    "param_values",
    "resolve_sections",
]


@dataclass(frozen=True, slots=True)
class SectionPage:
    """What a section builder returns. ``template`` is a template of ``calipers.web`` (it
    should extend ``section.html.j2``); ``context`` its variables; ``data`` the JSON served at
    ``/api/<key>`` (plain JSON values; NaN is sent as null). ``status`` is the page's HTTP
    status, ``api_status`` the JSON's (default: the same)."""

    template: str
    context: dict[str, Any] = field(default_factory=dict)
    data: Any = None
    status: int = 200
    api_status: int | None = None


SectionBuilder = Callable[[Store, Mapping[str, str]], SectionPage]


@dataclass(frozen=True, slots=True)
class Section:
    key: str
    title: str
    what: str  # one sentence: what the page shows
    command: str  # the CLI command that computes the same
    build: SectionBuilder | None = None  # set by resolve_sections


SECTIONS: tuple[Section, ...] = (
    Section(
        "ab",
        "A/B",
        "the A/B status of a candidate model against the baseline on "
        "logged traffic: the decision (promote, keep watching, roll back), the primary "
        "effect with its confidence sequence over time, and the guardrails",
        "calipers ab",
    ),
    Section(
        "monitor",
        "Monitor",
        "quality and latency over time windows with intervals, "
        "drift alarms per window and newly appearing kinds of requests",
        "calipers monitor",
    ),
    Section(
        "review",
        "Review",
        "a human review campaign: agreement per question, rates with items as the unit, "
        "ratings of pairwise campaigns, rater quality and final labels",
        "calipers review report",
    ),
)


def param_values(params: Mapping[str, str], key: str) -> list[str]:
    """Every value of a query parameter (``?price=a&price=b``); a plain mapping has one."""
    getlist = getattr(params, "getlist", None)
    if getlist is not None:
        return [str(v) for v in getlist(key)]
    return [params[key]] if key in params else []


def _ab(store: Store, params: Mapping[str, str]) -> SectionPage:
    from calipers.web._ab_page import ab_page  # imported on first use: calipers.monitor

    return ab_page(store, params)


def _monitor(store: Store, params: Mapping[str, str]) -> SectionPage:
    from calipers.web._monitor_page import monitor_page

    return monitor_page(store, params)


def _review(store: Store, params: Mapping[str, str]) -> SectionPage:
    from calipers.web._human_review_page import review_page  # calipers.review on first use

    return review_page(store, params)


BUILTIN_BUILDERS: dict[str, SectionBuilder] = {
    "ab": _ab,
    "monitor": _monitor,
    "review": _review,
}
"""Builders shipped with calipers, by section key."""


def resolve_sections(extra: Mapping[str, SectionBuilder] | None) -> tuple[Section, ...]:
    """The sections with their builders: ``extra`` over :data:`BUILTIN_BUILDERS`."""
    known = {s.key for s in SECTIONS}
    unknown = sorted(set(extra or {}) - known)
    if unknown:
        raise ConfigError(
            f"Unknown dashboard section(s): {', '.join(unknown)}.",
            hint=f"Sections are: {', '.join(sorted(known))}.",
        )
    builders = {**BUILTIN_BUILDERS, **(extra or {})}
    return tuple(Section(s.key, s.title, s.what, s.command, builders.get(s.key)) for s in SECTIONS)

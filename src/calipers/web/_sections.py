"""Dashboard sections that other packages fill in: the A/B status and monitoring.

A section is a navigation entry with a page at ``/<key>`` and its JSON at ``/api/<key>``.
Until a builder is plugged in, the page says honestly that the view is not available yet and
whether the store holds any gateway traffic at all. A builder reads the store and returns a
:class:`SectionPage`: a template of this package (which extends ``section.html.j2``), its
context, and the same content as JSON::

    def ab_page(store: Store, params: Mapping[str, str]) -> SectionPage:
        result = analyse_ab(store, ...)
        return SectionPage("ab.html.j2", {"result": result}, result.to_dict())

    app = create_app(store, sections={"ab": ab_page})

or, once the page ships with calipers, by naming it in :data:`BUILTIN_BUILDERS`.
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
    "resolve_sections",
    "traffic_status",
]


@dataclass(frozen=True, slots=True)
class SectionPage:
    """What a section builder returns. ``template`` is a template of ``calipers.web`` (it
    should extend ``section.html.j2``); ``context`` its variables; ``data`` the JSON served at
    ``/api/<key>`` (plain JSON values; NaN is sent as null)."""

    template: str
    context: dict[str, Any] = field(default_factory=dict)
    data: Any = None


SectionBuilder = Callable[[Store, Mapping[str, str]], SectionPage]


@dataclass(frozen=True, slots=True)
class Section:
    key: str
    title: str
    what: str  # one sentence: what the page will show
    command: str  # the CLI command that computes the same
    build: SectionBuilder | None = None


SECTIONS: tuple[Section, ...] = (
    Section("ab", "A/B", "the A/B status of a candidate model against the baseline on "
            "logged traffic: the decision (promote, keep watching, roll back), the primary "
            "effect with its confidence sequence over time, and the guardrails", "calipers ab"),
    Section("monitor", "Monitor", "quality and latency over time windows with intervals, "
            "drift alarms per window and newly appearing kinds of requests", "calipers monitor"),
)

BUILTIN_BUILDERS: dict[str, SectionBuilder] = {}
"""Builders shipped with calipers, by section key (filled in as the pages land)."""


def resolve_sections(extra: Mapping[str, SectionBuilder] | None) -> tuple[Section, ...]:
    """The sections with their builders: ``extra`` over :data:`BUILTIN_BUILDERS`."""
    known = {s.key for s in SECTIONS}
    unknown = sorted(set(extra or {}) - known)
    if unknown:
        raise ConfigError(f"Unknown dashboard section(s): {', '.join(unknown)}.",
                          hint=f"Sections are: {', '.join(sorted(known))}.")
    builders = {**BUILTIN_BUILDERS, **(extra or {})}
    return tuple(Section(s.key, s.title, s.what, s.command, builders.get(s.key))
                 for s in SECTIONS)


def traffic_status(store: Store) -> dict[str, Any]:
    """Whether the gateway logged anything: ``{"logged": bool, "first": ts | None}``."""
    first = store.get_traffic(limit=1)
    return {"logged": bool(first), "first": first[0].ts if first else None}

"""The Review page of the dashboard (``/review``, ``/api/review``): ``calipers review report``
on request, for one campaign (``?campaign=NAME``; default the newest), with links to the
others. Read-only: labelling happens on the pages of ``calipers review serve``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calipers.errors import CalipersError
from calipers.review import report_sections, review_report
from calipers.store import Store
from calipers.web._params import text
from calipers.web._sections import SectionPage

__all__ = ["review_page"]


def _page(
    *,
    alerts: list[str] | None = None,
    notes: list[str] | None = None,
    tables: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {"alerts": alerts or [], "notes": notes or [], "charts": [], "tables": tables or []}


_WHAT = (
    "Krippendorff's alpha per question (bootstrap over items), rates with items as the unit, "
    "agreement within and between pools, Bradley-Terry ratings for pairwise campaigns, each "
    "rater's quality figures, and the final labels by provenance."
)


def review_page(store: Store, params: Mapping[str, str]) -> SectionPage:
    campaigns = store.list_campaigns()
    names = [c.name for c in campaigns]
    if not names:
        return SectionPage(
            "section_generic.html.j2",
            _page(notes=["No review campaign yet: `calipers review create NAME --from ...`."]),
            {"campaigns": [], "report": None},
        )
    name = text(params, "campaign") or names[-1]
    links = [f"{n}: /review?campaign={n}" for n in names if n != name]
    if name not in names:
        return SectionPage(
            "section_generic.html.j2",
            _page(alerts=[f"No review campaign is named {name!r}."], notes=links),
            {"campaigns": names, "report": None, "error": f"no campaign {name!r}"},
            status=404,
        )
    method = text(params, "method") or "majority"
    try:
        report = review_report(store, name, method=method)  # type: ignore[arg-type]
    except (CalipersError, ValueError) as e:
        msg = getattr(e, "message", str(e))
        return SectionPage(
            "section_generic.html.j2",
            _page(alerts=[msg], notes=links),
            {"campaigns": names, "report": None, "error": msg},
            status=400,
        )
    secs = report_sections(report, labels=False)
    tables: list[dict[str, Any]] = [
        {"title": s.title, "columns": list(s.columns), "rows": [list(r) for r in s.rows]}
        for s in secs
    ]
    notes = [_WHAT]
    if links:
        notes.append("Other campaigns: " + "; ".join(links))
    return SectionPage(
        "section_generic.html.j2",
        _page(tables=tables, notes=notes),
        {"campaigns": names, "campaign": name, "report": report.to_dict()},
    )

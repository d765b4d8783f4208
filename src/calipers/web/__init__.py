"""``calipers ui``: a server-rendered dashboard over the store (layer 4, thin).

Runs and their samples, the full HTML report, paired comparisons, the leaderboard, the A/B
status and monitoring of the gateway's traffic; JSON twins of the pages under ``/api``.
Needs FastAPI (``pip install 'calipers[ui]'``). Charts are inline SVG (:mod:`calipers.web._charts`),
usable without FastAPI. See ``docs/ui.md``. :func:`review_app` builds the pages of
``calipers review serve``.

    from calipers.web import create_app
    app = create_app("sqlite:///.calipers/calipers.db")
"""

from calipers.web._app import CSP, create_app
from calipers.web._guard import new_token
from calipers.web._review_app import REVIEW_CSP, review_app
from calipers.web._sections import (
    BUILTIN_BUILDERS,
    SECTIONS,
    Section,
    SectionBuilder,
    SectionPage,
)

__all__ = [
    "BUILTIN_BUILDERS",
    "CSP",
    "REVIEW_CSP",
    "SECTIONS",
    "Section",
    "SectionBuilder",
    "SectionPage",
    "create_app",
    "new_token",
    "review_app",
]

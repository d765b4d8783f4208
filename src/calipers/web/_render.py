"""Templates of the dashboard: one Jinja environment, autoescaped everywhere.

Model outputs, prompts, task and model names reach pages only as template variables, so Jinja
escapes them; no template uses ``|safe`` on them. Chart markup is built by
:mod:`calipers.web._charts`, which escapes every text it writes, and arrives as ``Markup``.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from calipers._util.environment import calipers_version
from calipers.reports import clip, episode_steps, prompt_text, when

__all__ = ["css", "environment", "json_response", "page", "plain"]


def _load(name: str) -> str:
    if name.startswith("reports/"):
        return (
            resources.files("calipers.reports")
            .joinpath("templates", name.removeprefix("reports/"))
            .read_text("utf-8")
        )
    return resources.files("calipers.web").joinpath("templates", name).read_text("utf-8")


@cache
def environment() -> jinja2.Environment:
    """Autoescaped (every template, whatever its name), strict about undefined names."""
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        when=when,
        clip=clip,
        prompt_text=prompt_text,
        episode_steps=episode_steps,
        version=calipers_version(),
    )
    return env


@cache
def css() -> str:
    """The dashboard's whole stylesheet: the reports' theme and plots, then its own."""
    return "\n".join(_load(n) for n in ("reports/_style.css", "reports/_plots.css", "web.css"))


def page(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """Render template ``name`` with the layout's variables (sections, the active path)."""
    state = request.app.state
    html = (
        environment()
        .get_template(name)
        .render(
            sections=state.sections,
            path=request.url.path,
            store_url=state.store.url,
            css=Markup(css()),
            **context,
        )
    )
    return HTMLResponse(html, status_code=status_code)


def plain(data: Any) -> Any:
    """``data`` as plain JSON values: NaN and infinities become null, times ISO strings."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {str(k): plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [plain(v) for v in data]
    if isinstance(data, datetime):
        return data.isoformat()
    if data is None or isinstance(data, str | int | bool):
        return data
    return str(data)


def json_response(data: Any, status_code: int = 200) -> Response:
    body = json.dumps(plain(data), ensure_ascii=False, allow_nan=False)
    return Response(body, status_code=status_code, media_type="application/json")

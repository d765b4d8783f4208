"""The Monitor page (``/monitor``, ``/api/monitor``): ``calipers monitor`` on request.

Query parameters follow the CLI's options: ``since``, ``until`` (ISO, or back from now:
``24h``; default the 24 hours before now), ``window`` (``1h``), ``reference``
(``START..END``), ``alpha`` (per window), ``price`` (``[ARM=]IN/OUT``, repeatable),
``embeddings`` (**default ``tfidf`` here**, so a page load never loads a neural model; ``auto``
or ``sentence-transformers`` on request), ``embedding-test``, ``mode``, ``suite``, ``latest``,
``novelty``, ``outlier-quantile``, ``min-cluster``, ``sample``, ``seed``. Nothing is scored: online
scores and feedback are read as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from calipers._util.clock import utc_now
from calipers.errors import ConfigError
from calipers.monitor import (
    MonitorConfig,
    floor_time,
    is_relative,
    monitor,
    parse_duration,
    parse_prices,
    parse_range,
    parse_when,
)
from calipers.store import Store
from calipers.web._monitor_view import monitor_view
from calipers.web._params import flag, many, number, text
from calipers.web._sections import SectionPage

__all__ = ["MonitorQuery", "monitor_config", "monitor_page"]

_CHOICES = {
    "embeddings": ("auto", "tfidf", "sentence-transformers"),
    "embedding-test": ("mmd", "classifier"),
    "novelty": ("latest", "all"),
    "mode": ("shadow", "canary", "off"),
}


@dataclass
class MonitorQuery:
    """The page's parameters as typed (for the form)."""

    since: str = ""
    until: str = ""
    window: str = ""
    reference: str = ""
    alpha: str = ""
    embeddings: str = "tfidf"
    prices: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    suites: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, params: Mapping[str, str]) -> MonitorQuery:
        return cls(
            since=text(params, "since") or "",
            until=text(params, "until") or "",
            window=text(params, "window") or "",
            reference=text(params, "reference") or "",
            alpha=text(params, "alpha") or "",
            embeddings=text(params, "embeddings") or "tfidf",
            prices=many(params, "price"),
            modes=many(params, "mode"),
            suites=many(params, "suite"),
        )


def _choice(params: Mapping[str, str], key: str) -> str | None:
    value = text(params, key)
    if value is not None and value not in _CHOICES[key]:
        raise ConfigError(f"Bad {key}={value!r}.", hint=f"Use one of: {', '.join(_CHOICES[key])}.")
    return value


def monitor_config(params: Mapping[str, str], now: datetime) -> MonitorConfig:
    """The :class:`MonitorConfig` the page's query asks for (as ``calipers monitor`` reads
    its options, but with TF-IDF embeddings unless others are asked for)."""
    q = MonitorQuery.read(params)
    width = parse_duration(q.window) if q.window else timedelta(hours=1)
    since = parse_when(q.since, now) if q.since else None
    if since is not None and is_relative(q.since):
        since = floor_time(since, width)  # since=24h: windows start on whole windows
    for m in q.modes:
        if m not in _CHOICES["mode"]:
            raise ConfigError(f"Bad mode={m!r}.", hint="Use shadow, canary or off.")
    fields: dict[str, Any] = {
        "since": since,
        "window": width,
        "until": parse_when(q.until, now) if q.until else None,
        "reference": parse_range(q.reference, now) if q.reference else None,
        "prices": parse_prices(q.prices),
        "suites": q.suites,
        "modes": q.modes or None,
        "latest_only": flag(params, "latest"),
        "embeddings": _choice(params, "embeddings") or "tfidf",
        "embedding_test": _choice(params, "embedding-test"),
        "novelty": _choice(params, "novelty"),
        "alpha": number(params, "alpha", float, low=0, high=1, open_low=True, open_high=True),
        "outlier_quantile": number(
            params, "outlier-quantile", float, low=0, high=1, open_low=True, open_high=True
        ),
        "min_cluster": number(params, "min-cluster", int, low=2),
        "seed": number(params, "seed", int),
        "sample": number(params, "sample", int, low=10),
    }
    try:
        return MonitorConfig(
            **{
                k: v
                for k, v in fields.items()
                if v is not None or k in ("since", "until", "reference")
            }
        )
    except ValueError as e:  # pydantic's ValidationError
        raise ConfigError(f"Bad monitor parameter: {e}") from None


def monitor_page(store: Store, params: Mapping[str, str]) -> SectionPage:
    """The monitoring page and its JSON (``MonitorReport.to_dict()``)."""
    q = MonitorQuery.read(params)
    try:
        config = monitor_config(params, utc_now())
        report = monitor(store, config)
    except ConfigError as e:
        return SectionPage(
            "monitor.html.j2",
            {"q": q, "problem": e, "report": None},
            {"error": e.message, "hint": e.hint},
            400,
        )
    context = {"q": q, "problem": None, "report": report, **monitor_view(report, config, store.url)}
    return SectionPage("monitor.html.j2", context, report.to_dict())

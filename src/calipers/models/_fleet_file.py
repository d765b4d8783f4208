"""A fleet file (``--fleet FILE``): the servers of one model, as YAML (or JSON).

A list with one entry per server: a URL, or a mapping with ``url`` and optionally
``api_key_env`` (the *name* of the variable holding that server's key; default the run's
``--api-key-env``) and ``max_concurrency`` (the most requests in flight there; default
``--concurrency``, else 8)::

    - url: http://10.0.0.1:8000/v1
      max_concurrency: 16
    - url: http://10.0.0.2:8000/v1
      api_key_env: NODE2_KEY
    - http://10.0.0.3:8000/v1
"""

from __future__ import annotations

from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from calipers._util.yamlloc import load_yaml, yaml_line
from calipers.errors import ConfigError
from calipers.models._base import FleetEndpoint

__all__ = ["read_fleet"]

_ENDPOINTS = TypeAdapter(tuple[FleetEndpoint, ...])
_EXAMPLE = "For example:\n- url: http://127.0.0.1:8001/v1\n  max_concurrency: 8\n- url: ..."


def read_fleet(path: str | Path) -> tuple[FleetEndpoint, ...]:
    """The endpoints a fleet file lists; a ConfigError names the file, line and problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"Cannot read the fleet file {path}: {e.strerror or e}.", hint=_EXAMPLE
        ) from None
    raw = load_yaml(text, path)
    if not isinstance(raw, list) or not raw:
        raise ConfigError(
            f"{path}: a fleet file is a list of servers, one per entry.", hint=_EXAMPLE
        )
    entries = [{"url": e} if isinstance(e, str) else e for e in raw]
    try:
        return _ENDPOINTS.validate_python(entries)
    except ValidationError as e:
        err = e.errors()[0]
        loc = [x if isinstance(x, int) else str(x) for x in err["loc"]]
        line = yaml_line(text, loc)
        where = f"{path}:{line}" if line else str(path)
        field = ".".join(str(x) for x in loc)
        raise ConfigError(f"{where}: {field}: {err['msg']}.", hint=_EXAMPLE) from None

"""``calipers gateway``: the OpenAI-compatible shadow/canary proxy, under uvicorn."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import click

from calipers._util.yamlloc import load_yaml
from calipers.cli._app import Context, cli, store_option
from calipers.cli._net import check_port
from calipers.errors import ConfigError

__all__ = ["gateway_cmd"]

_KEY_ENV = ("CALIPERS_BASELINE_API_KEY", "CALIPERS_CANDIDATE_API_KEY")


def _file_settings(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read the gateway config {path}: {e.strerror}.") from None
    data = load_yaml(text, path) or {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of gateway settings.",
            hint="See docs/gateway.md for the settings.",
        )
    return data


def _params(pairs: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(
                f"--candidate-param {pair!r} is not NAME=VALUE.",
                hint="For example --candidate-param temperature=0.7",
            )
        try:
            out[name] = json.loads(value)
        except ValueError:
            out[name] = value
    return out


@cli.command("gateway")
@click.option(
    "--baseline",
    metavar="URL",
    help="Baseline upstream base URL, e.g. "
    "http://127.0.0.1:8000/v1 (users get its answers in shadow mode).",
)
@click.option("--candidate", metavar="URL", help="Candidate upstream base URL.")
@click.option(
    "--mode",
    type=click.Choice(["shadow", "canary", "off"]),
    help="shadow: mirror a fraction of requests; canary: serve a fraction of users "
    "from the candidate; off: baseline only.  [default: shadow]",
)
@click.option(
    "--fraction",
    type=click.FloatRange(0.0, 1.0),
    metavar="F",
    help="Share of requests mirrored (shadow) or of users served by the candidate "
    "(canary).  [default: 0.1]",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8090, show_default=True)
@click.option(
    "--user-header",
    "user_headers",
    multiple=True,
    metavar="NAME",
    help="Header holding the user/session key for canary stickiness (repeatable; "
    "default X-Calipers-User, then the body's `user` field).",
)
@click.option(
    "--candidate-timeout",
    type=click.FloatRange(min=0.001),
    metavar="SECONDS",
    help="Deadline of each candidate call.  [default: 30]",
)
@click.option(
    "--canary-deadline",
    metavar="MS|auto",
    help="Canary: how long a user waits for the candidate's first byte before the "
    "baseline answers; auto = the baseline's p95 + 500 ms (docs/gateway.md).  "
    "[default: auto]",
)
@click.option(
    "--candidate-param",
    "candidate_params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Body field set on requests to the candidate (VALUE is JSON or a string).",
)
@click.option(
    "--candidate-system-prompt",
    metavar="TEXT",
    help="System message put first in chat requests to the candidate.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Log e-mails/phones/cards as they are (API keys are removed regardless).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file of gateway settings (see docs/gateway.md); flags override it.",
)
@store_option
@click.pass_obj
def gateway_cmd(obj: Context, /, config_file: Path | None, **flags: Any) -> None:
    """Put an OpenAI-compatible gateway in front of a baseline and a candidate model server.

    Every request/response pair is logged to the store (API keys never). Upstream keys come
    from CALIPERS_BASELINE_API_KEY / CALIPERS_CANDIDATE_API_KEY, else the client's own
    Authorization header is passed on. Stop with Ctrl-C: in-flight requests finish and every
    accepted log row is written first.
    """
    settings = _file_settings(config_file) | _flag_settings(flags)
    if "baseline_url" not in settings:
        raise ConfigError(
            "Which baseline? Pass --baseline URL.", hint="e.g. --baseline http://127.0.0.1:8000/v1"
        )
    try:
        from calipers.gateway import load_config, serve
    except ImportError as e:
        raise ConfigError(
            f"The gateway needs {e.name or 'FastAPI and uvicorn'}.",
            hint="pip install 'calipers[gateway]'",
        ) from None
    from calipers.store import Store

    config = load_config(**settings)
    if config.fingerprint_canary is not None:
        from calipers.cli._monitor_fingerprint import load_reference

        load_reference(config.fingerprint_canary.reference)  # a clear error before serving
    check_port(flags["host"], flags["port"])
    with Store.open(obj.store_url, max_connections=config.store_connections) as store:
        obj.err.print(_banner(config, flags["host"], flags["port"], store.url), markup=False)
        serve(
            config,
            store,
            host=flags["host"],
            port=flags["port"],
            baseline_api_key=os.environ.get(_KEY_ENV[0]) or None,
            candidate_api_key=os.environ.get(_KEY_ENV[1]) or None,
        )


def _flag_settings(flags: dict[str, Any]) -> dict[str, Any]:
    given = {
        "baseline_url": flags["baseline"],
        "candidate_url": flags["candidate"],
        "mode": flags["mode"],
        "fraction": flags["fraction"],
        "user_headers": tuple(flags["user_headers"]) or None,
        "candidate_timeout_s": flags["candidate_timeout"],
        "canary_deadline_ms": _deadline(flags["canary_deadline"]),
        "candidate_params": _params(flags["candidate_params"]) or None,
        "candidate_system_prompt": flags["candidate_system_prompt"],
        "redact": False if flags["no_redact"] else None,
    }
    return {k: v for k, v in given.items() if v is not None}


def _deadline(value: str | None) -> float | None:
    """``--canary-deadline``: milliseconds, or ``auto`` (follow the baseline: ``None``)."""
    if value is None or value.strip().lower() == "auto":
        return None
    try:
        ms = float(value)
    except ValueError:
        ms = math.nan
    if not (math.isfinite(ms) and ms > 0):
        raise ConfigError(
            f"--canary-deadline {value!r} is neither a positive number of milliseconds nor auto.",
            hint="e.g. --canary-deadline 1500, or "
            "--canary-deadline auto (the baseline's p95 + 500 ms)",
        )
    return ms


def _banner(config: Any, host: str, port: int, store_url: str) -> str:
    where = f"http://{host}:{port}/v1"
    if config.mode == "shadow":
        what = (
            f"shadow: users get {config.baseline_url}; {config.fraction:.0%} of requests "
            f"mirrored to {config.candidate_url}"
        )
    elif config.mode == "canary":
        wait = (
            f"{config.canary_deadline_ms:g} ms"
            if config.canary_deadline_ms
            else f"the baseline's p95 + {config.canary_deadline_margin_ms:g} ms"
        )
        what = (
            f"canary: {config.fraction:.0%} of users served by {config.candidate_url}, "
            f"the rest by {config.baseline_url}; the baseline answers a canary user "
            f"when the candidate's first byte takes over {wait}"
        )
    else:
        what = f"off: every request to {config.baseline_url}"
    fp = config.fingerprint_canary
    if fp is not None:
        what += (
            f"\n  fingerprint canary {fp.name!r}: {fp.reference} against the {fp.upstream} "
            f"every {fp.every:g} s (calipers monitor shows it)"
        )
    return (
        f"calipers gateway listening on {where}\n  mode {what}\n  logging to {store_url}"
        f"\n  stats at http://{host}:{port}/calipers/stats; Ctrl-C to stop"
    )

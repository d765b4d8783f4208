"""Running the gateway under uvicorn until SIGINT/SIGTERM, then shutting down gracefully:
in-flight requests finish, shadow calls get their grace period, every accepted log row is
written."""

from __future__ import annotations

from calipers.gateway._app import create_app
from calipers.gateway._config import GatewayConfig
from calipers.store import Store

__all__ = ["serve"]


def serve(
    config: GatewayConfig,
    store: Store,
    *,
    host: str = "127.0.0.1",
    port: int = 8090,
    baseline_api_key: str | None = None,
    candidate_api_key: str | None = None,
    log_level: str = "warning",
) -> None:
    """Serve until stopped. The caller opened ``store`` (so its errors come first) and
    closes it afterwards."""
    import gc
    import sys

    import uvicorn

    from calipers.gateway._redact_hook import make_redactor

    app = create_app(
        config, store=store, baseline_api_key=baseline_api_key,
        candidate_api_key=candidate_api_key,
    )  # fmt: skip
    server = uvicorn.Server(
        uvicorn.Config(
            app, host=host, port=port, log_level=log_level, access_log=False, lifespan="on",
            timeout_graceful_shutdown=max(30, int(config.shutdown_grace_s) + 5),
        )
    )  # fmt: skip
    make_redactor()  # import everything the first requests would, before freezing
    # Everything allocated so far (imports, mostly) lives as long as the process: keep it out
    # of the garbage collector's full passes, which otherwise stall every request for tens of
    # milliseconds now and then.
    gc.collect()
    gc.freeze()
    # The log writer's thread holds the GIL for up to the switch interval at a time while the
    # event loop waits; 1 ms instead of 5 ms keeps that out of the users' tail latency.
    sys.setswitchinterval(0.001)
    server.run()

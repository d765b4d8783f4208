"""Real HTTP servers for tests: an ASGI app under uvicorn on a free loopback port, in a thread
(the gateway rig and the dashboard's browser tests both use it)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Literal

import uvicorn

__all__ = ["ServerThread", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerThread:
    """An ASGI app under uvicorn on a free loopback port, in a daemon thread."""

    def __init__(
        self,
        app: Any,
        *,
        graceful_s: int = 10,
        lifespan: Literal["auto", "on", "off"] = "on",
        log_level: str = "warning",
    ) -> None:
        self.port = free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level=log_level, access_log=False,
            lifespan=lifespan, timeout_graceful_shutdown=graceful_s,
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the server did not shut down"

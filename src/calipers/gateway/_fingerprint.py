"""The gateway's fingerprint canary: a background task that, every ``every`` seconds, sends
the probes of a recorded fingerprint to one upstream's ``/chat/completions`` with the
reference's settings and stores the look (ok, or failed with why) through
:func:`calipers.monitor.take_fingerprint_look`. It never touches the users' path: its own
requests, its own deadline, no circuit breaker (a failed look is a record, not a fault of
the user's traffic). A bug in a look is logged and the next look comes on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from calipers.gateway._config import FingerprintCanaryConfig
from calipers.gateway._proxy import Upstream, request_headers
from calipers.store import FingerprintLookRecord, Store
from calipers.types import Fingerprint, FingerprintProbe, FingerprintSettings

__all__ = ["FingerprintCanary", "UpstreamAnswerError", "request_body"]

_log = logging.getLogger("calipers.gateway")


class UpstreamAnswerError(Exception):
    """The upstream answered, but not with a completion (an error status, a bad body)."""


def request_body(model: str, probe: FingerprintProbe, settings: FingerprintSettings) -> bytes:
    """The OpenAI chat request of one probe with the reference's settings."""
    messages = [{"role": "system", "content": settings.system}] if settings.system else []
    messages.append({"role": "user", "content": probe.prompt})
    return json.dumps(
        {
            "model": model,
            "messages": messages,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_tokens,
            "stream": False,
        }
    ).encode()


def _completion(status: int, content: bytes) -> str:
    if not 200 <= status < 300:
        raise UpstreamAnswerError(f"HTTP {status}: {content[:200].decode(errors='replace')}")
    try:
        text = json.loads(content)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise UpstreamAnswerError("the answer is not a chat completion") from None
    if not isinstance(text, str):
        raise UpstreamAnswerError("the completion has no text content")
    return text


class FingerprintCanary:
    def __init__(self, config: FingerprintCanaryConfig, upstream: Upstream, store: Store) -> None:
        self.config = config
        self.upstream = upstream
        self.store = store
        self.fingerprint = Fingerprint.load(config.reference)
        self.model = config.model or self.fingerprint.model.split(":", 1)[-1]
        self._task: asyncio.Task[None] | None = None
        self.looks = 0
        self.ok = 0
        self.failed = 0
        self.errors = 0
        self.last_error: str | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="calipers-fingerprint-canary")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await self.look()
            except Exception as e:  # a bug in one look must not end the canary
                self.errors += 1
                _log.exception("fingerprint canary %s: the look failed", self.config.name)
                self.last_error = f"gateway error: {type(e).__name__}: {e}"
            wait = self.config.every - (time.monotonic() - started)
            await asyncio.sleep(max(wait, 0.0))

    async def look(self) -> FingerprintLookRecord:
        """Take one look now and store it."""
        from calipers.monitor import CanaryDesign, take_fingerprint_look

        c = self.config
        design = CanaryDesign(alpha=c.alpha, probes_per_look=c.probes_per_look)
        record = await take_fingerprint_look(
            self.fingerprint, self._sample, self.store, model=f"{self.model} @ "
            f"{self.upstream.base_url}", canary=c.name, design=design,
        )  # fmt: skip
        self.looks += 1
        if record.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
            self.last_error = record.error
        return record

    async def _sample(self, probe: FingerprintProbe, settings: FingerprintSettings) -> str:
        body = request_body(self.model, probe, settings)
        headers = request_headers([(b"content-type", b"application/json")], self.upstream.api_key)
        try:
            async with asyncio.timeout(self.config.timeout_s):
                response = await self.upstream.open("POST", "chat/completions", headers, body)
                try:
                    content = await response.aread()
                finally:
                    await response.aclose()
        except TimeoutError:
            raise TimeoutError(f"no answer within {self.config.timeout_s:g} s") from None
        return _completion(response.status_code, content)

    def snapshot(self) -> dict[str, Any]:
        return {
            "name": self.config.name,
            "upstream": self.upstream.base_url,
            "every_s": self.config.every,
            "looks": self.looks,
            "ok": self.ok,
            "failed": self.failed,
            "errors": self.errors,
            "last_error": self.last_error,
        }

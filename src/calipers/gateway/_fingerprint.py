"""The gateway's fingerprint canary: a background task that, every ``every`` seconds, sends
the probes of a recorded fingerprint to one upstream's ``/chat/completions`` with the
reference's settings and stores the look (ok, or failed with why) through
:func:`calipers.monitor.take_fingerprint_look`. Gateway replicas sharing a store share one
canary: the holder of its job lease in the store takes the looks, on a schedule kept in the
store (the next look is due ``every`` after the last stored one), and a replica that dies
is replaced by another within ``lease_s``. It never touches the users' path: its own
requests, its own deadline, no circuit breaker (a failed look is a record, not a fault of
the user's traffic). A bug in a look is logged and the next look comes on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from typing import Any

from calipers.errors import StoreError
from calipers.gateway._config import FingerprintCanaryConfig
from calipers.gateway._proxy import Upstream, request_headers
from calipers.store import FingerprintLookRecord, JobLeaseLostError, Store
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
    """The canary of one gateway process. Of several replicas on one store, only the holder
    of the store's job lease ``fingerprint-canary:<name>`` takes looks; the others wait to
    take it over (see :meth:`_keep_lease`)."""

    def __init__(
        self,
        config: FingerprintCanaryConfig,
        upstream: Upstream,
        store: Store,
        *,
        holder: str | None = None,
    ) -> None:
        self.config = config
        self.upstream = upstream
        self.store = store
        self.fingerprint = Fingerprint.load(config.reference)
        self.model = config.model or self.fingerprint.model.split(":", 1)[-1]
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """This process's name as a lease holder: unique per process start."""
        self.lease_name = f"fingerprint-canary:{config.name}"
        # Imported now, at start-up: importing the statistics on the first look would hold
        # the event loop (users' requests, the lease's renewals) for a second or more.
        from calipers.monitor import fingerprint_hash

        self._reference_hash = fingerprint_hash(self.fingerprint)
        self._tasks: list[asyncio.Task[None]] = []
        self._held_until = 0.0  # time.monotonic() until which this replica holds the lease
        self._became_leader = asyncio.Event()
        self._due: float | None = None  # time.time() of the next look; None: read the store
        self.looks = 0
        self.ok = 0
        self.failed = 0
        self.errors = 0
        self.terms = 0
        """How many times this replica became the canary's leader."""
        self.lease_errors = 0
        self.looks_refused = 0
        """Looks taken but not stored because the lease was lost meanwhile."""
        self.last_error: str | None = None

    @property
    def leader(self) -> bool:
        """Whether this replica holds the lease now (as far as it knows)."""
        return time.monotonic() < self._held_until

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._keep_lease(), name="calipers-fingerprint-lease"),
            asyncio.create_task(self._run(), name="calipers-fingerprint-canary"),
        ]

    async def close(self) -> None:
        """Stop looking and give the lease up, so another replica takes over at once."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.terms:
            self._held_until = 0.0
            try:
                await asyncio.to_thread(self.store.release_job_lease, self.lease_name, self.holder)
            except Exception as e:  # it expires by itself
                _log.warning("fingerprint canary: could not give up the lease: %s", e)

    async def _keep_lease(self) -> None:
        """Take the lease when it is free or expired, renew it while held, every third of
        ``lease_s``. A failed renewal keeps what was held until it runs out: the store's
        check at each write decides, not this process's guess."""
        lease_s = self.config.lease_s
        while True:
            t0 = time.monotonic()
            try:
                held = await asyncio.to_thread(
                    self.store.hold_job_lease, self.lease_name, self.holder, lease_s
                )
            except Exception as e:  # the store is down: try again later
                self.lease_errors += 1
                _log.warning("fingerprint canary %s: the lease: %s", self.config.name, e)
            else:
                if held and not self.leader:
                    self.terms += 1
                    self._due = None
                    self._became_leader.set()
                    _log.info("fingerprint canary %s: %s leads", self.config.name, self.holder)
                self._held_until = t0 + lease_s if held else 0.0
            await asyncio.sleep(max(lease_s / 3 - (time.monotonic() - t0), 0.0))

    async def _run(self) -> None:
        poll = self.config.lease_s / 3
        while True:
            if not self.leader:
                self._became_leader.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._became_leader.wait(), poll)
                continue
            if self._due is None:  # continue the schedule where the last leader left it
                last = await asyncio.to_thread(
                    self.store.last_fingerprint_look, self.config.name, self._reference_hash
                )
                self._due = time.time() if last is None else last.timestamp() + self.config.every
            wait = self._due - time.time()
            if wait > 0:
                await asyncio.sleep(min(wait, poll))
                continue
            started = time.time()
            try:
                await self.look()
            except JobLeaseLostError:
                self.looks_refused += 1
                self._held_until = 0.0
                _log.warning("fingerprint canary %s: lost the lease mid-look", self.config.name)
            except StoreError as e:  # not stored: the look is taken again once it can be
                self.errors += 1
                self.last_error = f"store: {e}"
                _log.warning("fingerprint canary %s: %s", self.config.name, e)
                self._due = None
                await asyncio.sleep(poll)
                continue
            except Exception as e:  # a bug in one look must not end the canary
                self.errors += 1
                _log.exception("fingerprint canary %s: the look failed", self.config.name)
                self.last_error = f"gateway error: {type(e).__name__}: {e}"
            self._due = started + self.config.every

    async def look(self) -> FingerprintLookRecord:
        """Take one look now and store it, if this replica still holds the lease then
        (else :class:`~calipers.store.JobLeaseLostError`)."""
        from calipers.monitor import CanaryDesign, take_fingerprint_look

        c = self.config
        design = CanaryDesign(alpha=c.alpha, probes_per_look=c.probes_per_look)
        record = await take_fingerprint_look(
            self.fingerprint, self._sample, self.store, model=f"{self.model} @ "
            f"{self.upstream.base_url}", canary=c.name, design=design,
            lease=(self.lease_name, self.holder),
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
            "leader": self.leader,
            "holder": self.holder,
            "times_leader": self.terms,
            "lease_errors": self.lease_errors,
            "looks_refused_lease_lost": self.looks_refused,
            "looks": self.looks,
            "ok": self.ok,
            "failed": self.failed,
            "errors": self.errors,
            "last_error": self.last_error,
        }

"""The gateway: per request, choose the arm, serve the user, mirror a copy, queue the log.

The user's request goes to one upstream and its answer comes back unchanged. Everything else
(the shadow copy, the log rows) is handed to a bounded queue without waiting; the background
workers that empty those queues can be slow, fail or fall behind without the user noticing.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from calipers._util.clock import utc_now
from calipers.gateway._breaker import CircuitBreaker
from calipers.gateway._calls import Call, to_record
from calipers.gateway._canary import Canary
from calipers.gateway._config import GatewayConfig
from calipers.gateway._deadline import FirstByteDeadline
from calipers.gateway._feedback import ServedArms
from calipers.gateway._fingerprint import FingerprintCanary
from calipers.gateway._forward import (
    open_upstream,
    read_whole,
    stream_response,
    unavailable,
    whole_response,
)
from calipers.gateway._logwriter import LogWriter
from calipers.gateway._proxy import RawHeaders, Upstream, request_headers
from calipers.gateway._rag import forwarded_bytes, rag_refusal, split_rag
from calipers.gateway._redact_hook import make_redactor, request_secrets
from calipers.gateway._routing import MirrorSampler, hash_key, in_canary, user_key
from calipers.gateway._shadow import Shadow, ShadowJob
from calipers.store import RagFieldError, Store, TrafficRole

__all__ = ["Gateway"]


@dataclass(slots=True)
class _Req:
    pair_id: str
    ts: datetime
    t0: float
    endpoint: str
    body: Any
    raw: bytes
    """What the upstream gets: the client's bytes, without ``calipers_rag`` when it had one
    (``body``, which is logged, keeps it)."""
    stream: bool
    headers: RawHeaders
    user_key_hash: str | None
    secrets: tuple[str, ...]


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


class Gateway:
    """Owns the upstream clients, the shadow workers and the log writer of one app."""

    def __init__(
        self,
        config: GatewayConfig,
        store: Store,
        *,
        baseline_api_key: str | None = None,
        candidate_api_key: str | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self._keys = (baseline_api_key, candidate_api_key)
        self._named = frozenset(h.encode("latin-1") for h in config.user_headers)
        shadow_fraction = config.fraction if config.mode == "shadow" else 0.0
        self.sampler = MirrorSampler(shadow_fraction, config.seed)
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_reset_s)
        self.deadline = FirstByteDeadline(
            fixed_ms=config.canary_deadline_ms, margin_ms=config.canary_deadline_margin_ms,
            floor_ms=config.canary_deadline_floor_ms, start_ms=config.canary_deadline_start_ms,
            ceiling_ms=config.candidate_timeout_s * 1000.0,
        )  # fmt: skip
        self.requests = 0
        self.served = {"baseline": 0, "candidate": 0}
        self.sampled = 0
        self.canary_fallbacks = 0
        self.unkeyed = 0
        self.rag = {"requests": 0, "refused": 0}
        self.arms = ServedArms()
        self.fingerprint: FingerprintCanary | None = None

    async def start(self) -> None:
        cfg = self.config
        self.baseline = Upstream(
            cfg.baseline_url, timeout_s=cfg.baseline_timeout_s,
            connect_timeout_s=cfg.connect_timeout_s, max_connections=cfg.max_connections,
            api_key=self._keys[0],
        )  # fmt: skip
        self.candidate: Upstream | None = None
        if cfg.candidate_url is not None and cfg.mode != "off":
            self.candidate = Upstream(
                cfg.candidate_url, timeout_s=cfg.candidate_timeout_s,
                connect_timeout_s=min(cfg.connect_timeout_s, cfg.candidate_timeout_s),
                max_connections=max(cfg.shadow_workers, cfg.max_connections // 4),
                api_key=self._keys[1],
            )  # fmt: skip
        self.redact = redact = make_redactor(personal=cfg.redact)
        self.log = LogWriter(
            self.store.add_traffic, lambda call: to_record(call, redact, cfg.salt),
            queue_size=cfg.log_queue_size, batch_max_rows=cfg.batch_max_rows,
            batch_window_s=cfg.batch_window_ms / 1000.0, retry_s=cfg.log_retry_s,
        )  # fmt: skip
        self.log.start()
        self.shadow: Shadow | None = None
        if self.candidate is not None and cfg.mode == "shadow":
            self.shadow = Shadow(
                self.candidate, self.breaker, self.log.submit, workers=cfg.shadow_workers,
                queue_size=cfg.shadow_queue_size, timeout_s=cfg.candidate_timeout_s,
            )  # fmt: skip
            self.shadow.start()
        self.canary: Canary | None = None
        if self.candidate is not None and cfg.mode == "canary":
            self.canary = Canary(self.candidate, self.breaker, self.deadline, self.log.submit)
        fp = cfg.fingerprint_canary
        if fp is not None:
            upstream = self.candidate if fp.upstream == "candidate" else self.baseline
            assert upstream is not None  # the config checked that there is a candidate
            self.fingerprint = FingerprintCanary(fp, upstream, self.store)
            self.fingerprint.start()

    async def stop(self) -> None:
        """Finish or cancel the shadow calls, write every accepted log row, close clients."""
        if self.fingerprint is not None:
            await self.fingerprint.close()
        if self.shadow is not None:
            await self.shadow.close(self.config.shutdown_grace_s)
        await self.log.close()
        await self.baseline.aclose()
        if self.candidate is not None:
            await self.candidate.aclose()

    # -- the request path ---------------------------------------------------------------------

    async def handle(self, request: Request, endpoint: str) -> Response:
        t0 = time.perf_counter()
        raw = await request.body()
        body = _json(raw)
        try:
            raw, has_rag = split_rag(body, raw)
        except RagFieldError as e:
            self.rag["refused"] += 1
            return rag_refusal(e)
        self.rag["requests"] += int(has_rag)
        cfg = self.config
        headers: RawHeaders = request.scope["headers"]
        named = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers if k in self._named}
        key = user_key(named, body, cfg.user_headers)
        req = _Req(
            pair_id=uuid.uuid4().hex, ts=utc_now(), t0=t0, endpoint=endpoint, body=body,
            raw=raw, stream=isinstance(body, dict) and body.get("stream") is True,
            headers=headers,
            user_key_hash=hash_key(key, cfg.salt) if key is not None else None,
            secrets=request_secrets(headers, *self._keys),
        )  # fmt: skip
        self.requests += 1
        if self.canary is not None:
            if key is None:
                self.unkeyed += 1
            elif in_canary(key, cfg.salt, cfg.fraction):
                answer = await self._try_candidate(req, self.canary)
                if answer is not None:
                    return answer
                self.canary_fallbacks += 1
        elif self.shadow is not None and isinstance(body, dict) and self.sampler():
            self.sampled += 1
            self._mirror(req)
        return await self._serve(req)

    def _call(self, req: _Req, role: TrafficRole, upstream: Upstream, body: Any) -> Call:
        return Call(
            pair_id=req.pair_id, role=role, served=True, mode=self.config.mode,
            endpoint=req.endpoint, upstream=upstream.base_url, ts=req.ts,
            user_key_hash=req.user_key_hash, body=body, raw=req.raw, stream=req.stream,
            secrets=req.secrets,
        )  # fmt: skip

    async def _serve(self, req: _Req) -> Response:
        """Serve from the baseline."""
        self.served["baseline"] += 1
        self.arms.remember(req.pair_id, "baseline")
        call = self._call(req, "baseline", self.baseline, req.body)
        headers = request_headers(req.headers, api_key=self.baseline.api_key)
        since_ms = (time.perf_counter() - req.t0) * 1000.0  # before the baseline was called
        response = await open_upstream(self.baseline, call, headers, req.raw, req.t0)
        if response is None:
            self.log.submit(call)
            return unavailable(call)
        if req.stream:
            return stream_response(response, call, req.t0, self._baseline_done(since_ms))
        await read_whole(response, call, req.t0)
        self.log.submit(call)
        if call.error:
            return unavailable(call)
        if (
            self.canary is not None
            and call.latency_ms is not None
            and call.status is not None
            and 200 <= call.status < 300
        ):
            self.deadline.observe(False, call.latency_ms - since_ms)
        return whole_response(call, response)

    def _baseline_done(self, since_ms: float) -> Callable[[Call], None]:
        """Log a streamed baseline call; in canary mode, its first-byte time also sets the
        candidate's deadline."""

        def done(call: Call) -> None:
            self.log.submit(call)
            if self.canary is not None and call.ttft_ms is not None and call.error is None:
                self.deadline.observe(True, call.ttft_ms - since_ms)

        return done

    async def _try_candidate(self, req: _Req, canary: Canary) -> Response | None:
        """Serve a canary user from the candidate; ``None`` when it could not answer in time
        before anything reached the user (then the baseline serves; the call is logged)."""
        body, content = self._candidate_body(req)
        call = self._call(req, "candidate", canary.upstream, body)
        headers = request_headers(req.headers, api_key=canary.upstream.api_key)
        answer = await canary.serve(call, headers, content, req.t0)
        if answer is not None:
            self.served["candidate"] += 1
            self.arms.remember(req.pair_id, "candidate")
        return answer

    def _candidate_body(self, req: _Req) -> tuple[Any, bytes]:
        """The body sent to the candidate: the user's, with the configured changes."""
        cfg = self.config
        if not isinstance(req.body, dict) or not (
            cfg.candidate_params or cfg.candidate_system_prompt is not None
        ):
            return req.body, req.raw
        body = {**req.body, **cfg.candidate_params}
        messages = body.get("messages")
        if cfg.candidate_system_prompt is not None and isinstance(messages, list):
            rest = messages[1:] if messages and _is_system(messages[0]) else messages
            body["messages"] = [{"role": "system", "content": cfg.candidate_system_prompt}, *rest]
        return body, forwarded_bytes(body)

    def _mirror(self, req: _Req) -> None:
        assert self.shadow is not None and self.candidate is not None
        body, content = self._candidate_body(req)
        self.shadow.submit(
            ShadowJob(
                pair_id=req.pair_id, ts=req.ts, endpoint=req.endpoint, mode=self.config.mode,
                user_key_hash=req.user_key_hash, body=body, content=content,
                headers=request_headers(req.headers, api_key=self.candidate.api_key),
                stream=req.stream, secrets=req.secrets,
            )
        )  # fmt: skip

    # -- the rest -----------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "mode": cfg.mode,
            "fraction": cfg.fraction,
            "requests": self.requests,
            "served": dict(self.served),
            "sampled_for_shadow": self.sampled,
            "canary_fallbacks": self.canary_fallbacks,
            "canary": self.canary.snapshot() if self.canary is not None else None,
            "canary_requests_without_user_key": self.unkeyed,
            "rag": dict(self.rag),
            "shadow": self.shadow.snapshot() if self.shadow is not None else None,
            "breaker": self.breaker.snapshot(),
            "log": self.log.snapshot(),
            "fingerprint_canary": (
                self.fingerprint.snapshot() if self.fingerprint is not None else None
            ),
        }


def _is_system(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "system"

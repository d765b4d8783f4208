"""A fleet: several OpenAI-compatible servers of one model, used as one provider.

``openai:MODEL`` with ``--base-url`` given more than once, or ``--fleet FILE`` (a YAML list of
``{url, api_key_env, max_concurrency}``; docs/fleet.md). One :class:`OpenAIModel` per endpoint
makes the requests (``generate``, ``loglikelihood``, ``score_continuations``: whatever the
openai provider offers, the fleet offers), with its own retries turned off: the fleet retries,
on whichever endpoint has room.

- **Spreading**: a request goes to the least loaded endpoint (in flight / its window) with
  room; when none has room it waits for one. Each endpoint's window adapts (AIMD,
  ``_fleet_window``) up to its ``max_concurrency`` (``--concurrency``, default 8); the runner may
  have the fleet's combined capacity in flight (``concurrency_limit``).
- **Failover**: an endpoint where nothing listens, or that fails ``MAX_FAILURES`` times in a
  row (5xx, timeouts, dropped connections), is taken out; the requests that failed on it are
  retried elsewhere at once (no backoff, and without using up ``--max-retries``: an endpoint
  being down is not an overloaded request). After a cool-down (5 s, doubling up to 60 s) it is
  probed with ``GET /models`` and, serving the fleet's model, put back. A 429, 5xx or timeout
  waits the usual backoff before its retry. Every retry is reported to the call tracker.
  With every endpoint down, the fleet probes them all once more and otherwise fails the run
  as a single dead server does (:class:`ModelLoadError`, "Is the server running?"): samples
  stored so far stay, ``--resume`` finishes the rest.
- **Identity**: on first use every endpoint's ``GET /models`` says what it serves (the model
  id, and vLLM's ``root``/``parent`` or llama.cpp's ``meta``: parameters, vocabulary, size);
  all must agree, or the fleet is refused naming each endpoint and what it serves. The
  identity records the model, never the endpoints, so a run resumes on another fleet of the
  same model; the methodology's ``model_runtime`` records the endpoints (URLs, never keys)
  and that the identity was checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from calipers.errors import ConfigError, ModelCallError, ModelLoadError
from calipers.models._base import FleetEndpoint, ModelOptions, ModelProvider
from calipers.models._calls import Retry, current_calls
from calipers.models._fleet_identity import agree, describe, served_model
from calipers.models._fleet_window import EndpointWindow
from calipers.models._openai import MAX_DELAY_S, Attempt, OpenAIModel
from calipers.types import (
    ChatMessage,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    TokenStatsRequest,
    TokenStatsResult,
)

__all__ = ["DEFAULT_MAX_CONCURRENCY", "FleetModel", "fleet_from_spec"]

DEFAULT_MAX_CONCURRENCY = 8

T = TypeVar("T")

# How an attempt may end when the endpoint, not the request, is the trouble.
_FAILOVER = frozenset({"rate_limited", "server_error", "timeout", "refused", "dropped"})

# The attempts of the request running in this task (the fleet reads how it ended).
_attempts: ContextVar[list[Attempt] | None] = ContextVar("calipers_fleet_attempts", default=None)


def _heard(attempt: Attempt) -> None:
    seen = _attempts.get()
    if seen is not None:
        seen.append(attempt)


def fleet_from_spec(rest: str, options: ModelOptions) -> FleetModel:
    return FleetModel(rest, options)


class _Down(Exception):
    """An endpoint did not answer ``GET /models`` (why, in a few words)."""


@dataclass
class _Endpoint:
    url: str
    model: OpenAIModel
    state: EndpointWindow
    probing: bool = False


class FleetModel(ModelProvider):
    """One model served by several OpenAI-compatible endpoints (see the module docstring)."""

    provider_name = "openai"

    def __init__(
        self,
        model: str,
        options: ModelOptions,
        *,
        backoff_base_s: float = 0.5,
        jitter_seed: int = 0,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> None:
        if not options.fleet:
            raise ConfigError("A fleet needs at least one endpoint.", hint="See docs/fleet.md.")
        self.model = model
        self.options = options
        self.tool_choice = tool_choice
        self.backoff_base_s = backoff_base_s
        self._rng = random.Random(jitter_seed)
        self.endpoints = [self._endpoint(e) for e in options.fleet]
        urls = [e.url for e in self.endpoints]
        if len(set(urls)) != len(urls):
            raise ConfigError(
                f"The fleet lists an endpoint twice: {', '.join(urls)}.",
                hint="Give each server once (raise its max_concurrency instead).",
            )
        self.default_concurrency = sum(e.state.cap for e in self.endpoints)
        self.supports_loglikelihood = self.endpoints[0].model.supports_loglikelihood
        self.supports_token_stats = self.endpoints[0].model.supports_token_stats
        self._served: dict[str, str] | None = None
        self._identity: ModelIdentity | None = None
        self._changed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._probes: set[asyncio.Task[None]] = set()

    def _endpoint(self, spec: FleetEndpoint) -> _Endpoint:
        cap = spec.max_concurrency or self.options.concurrency or DEFAULT_MAX_CONCURRENCY
        opts = self.options.model_copy(
            update={
                "base_url": spec.url,
                "api_key_env": spec.api_key_env or self.options.api_key_env,
                "concurrency": cap,
                "max_retries": 0,  # the fleet retries, on whichever endpoint has room
                "fleet": (),
            }
        )
        model = OpenAIModel(self.model, opts, tool_choice=self.tool_choice)
        model.on_attempt = _heard
        return _Endpoint(model.base_url, model, EndpointWindow(cap=cap))

    # -- identity ----------------------------------------------------------------------------

    def identity(self) -> ModelIdentity:
        """Asks every endpoint's ``GET /models`` once; all must serve the same model."""
        if self._identity is None:
            served: dict[str, dict[str, str]] = {}
            unreachable: dict[str, str] = {}
            for ep in self.endpoints:
                try:
                    served[ep.url] = self._ask_sync(ep)
                except _Down as e:
                    unreachable[ep.url] = str(e)
            if not served:
                raise self._all_down(unreachable)
            self._served = agree(served)
            now = time.monotonic()
            for ep in self.endpoints:
                if ep.url in unreachable:
                    ep.state.down(now, unreachable[ep.url])
            extra = {f"served.{k}": v for k, v in self._served.items() if k != "id"}
            if self.tool_choice is not None:
                extra["tool_choice"] = json.dumps(self.tool_choice, sort_keys=True)
            self._identity = ModelIdentity(
                provider="openai",
                name=self.model,
                api_model=self._served.get("id"),
                base_url=None,  # the endpoints are how it ran, not what ran (model_runtime)
                extra={"fleet": "identity checked", **extra},
            )
        return self._identity

    def _ask_sync(self, ep: _Endpoint) -> dict[str, str]:
        timeout = min(self.options.timeout_s, 10.0)
        try:
            resp = httpx.get(f"{ep.url}/models", headers=ep.model._headers(), timeout=timeout)
        except httpx.TransportError as e:
            raise _Down(f"{type(e).__name__}: {e}") from None
        return self._read_models(ep, resp)

    async def _ask(self, ep: _Endpoint) -> dict[str, str]:
        timeout = min(self.options.timeout_s, 10.0)
        try:
            async with httpx.AsyncClient(timeout=timeout) as client:
                resp = await client.get(f"{ep.url}/models", headers=ep.model._headers())
        except httpx.TransportError as e:
            raise _Down(f"{type(e).__name__}: {e}") from None
        return self._read_models(ep, resp)

    def _read_models(self, ep: _Endpoint, resp: httpx.Response) -> dict[str, str]:
        if resp.status_code in (401, 403):
            raise ModelLoadError(
                f"{ep.url} refused the API key from ${ep.model.options.api_key_env} "
                f"(HTTP {resp.status_code}).",
                hint=f"Check the key in ${ep.model.options.api_key_env}.",
            )
        try:
            body = resp.json() if resp.status_code == 200 else None
        except ValueError:
            body = None
        return served_model(body, self.model)

    def runtime(self) -> dict[str, int | str]:
        """The endpoints (URLs, never keys) and what the identity check found."""
        served = describe(self._served) if self._served else "not yet checked"
        up = sum(e.state.health == "up" for e in self.endpoints)
        checks = sorted(
            {str(v) for e in self.endpoints if (v := e.model.runtime().get("loglikelihood"))}
        )
        return {
            "fleet": " ".join(e.url for e in self.endpoints),
            "fleet_identity": f"GET /models on each endpoint ({up} answered): {served}",
            **({"loglikelihood": " | ".join(checks)} if checks else {}),
        }

    def loglikelihood_refusal(self) -> str | None:
        """Every endpoint that answers is checked (each verifies its own server once): one
        shifted server in a fleet would make some samples' log-likelihoods wrong."""
        self.identity()
        for ep in self.endpoints:
            if ep.state.health == "up":
                why = ep.model.loglikelihood_refusal()
                if why is not None:
                    return why
        return None

    def concurrency_limit(self, asked: int | None) -> int:
        return self.default_concurrency  # ``asked`` already bounds each endpoint

    # -- spreading ---------------------------------------------------------------------------

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._changed is None or self._loop is not loop:
            self._changed, self._loop = asyncio.Condition(), loop
        return self._changed

    async def _notify(self) -> None:
        cond = self._condition()
        async with cond:
            cond.notify_all()

    async def _acquire(self) -> _Endpoint:
        """The least loaded endpoint with room (waiting for one); raises when all are down."""
        cond = self._condition()
        while True:
            async with cond:
                now = time.monotonic()
                self._start_probes(now)
                ready = [e for e in self.endpoints if e.state.has_room()]
                if ready:
                    ep = min(ready, key=lambda e: (e.state.load(), e.state.in_flight))
                    ep.state.in_flight += 1
                    return ep
                all_down = not any(e.state.health == "up" or e.probing for e in self.endpoints)
                if not all_down:
                    down = [
                        e.state.retry_at - now for e in self.endpoints if e.state.health == "down"
                    ]
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(cond.wait(), max(0.05, min(down)) if down else None)
            if all_down:  # one more look at each before giving up
                await self._probe_all()
                await self._notify()
                if not any(e.state.health == "up" or e.probing for e in self.endpoints):
                    raise self._all_down({e.url: e.state.why_down for e in self.endpoints})

    def _start_probes(self, now: float) -> None:
        for ep in self.endpoints:
            if ep.state.health == "down" and not ep.probing and ep.state.retry_at <= now:
                ep.probing = True
                task = asyncio.get_running_loop().create_task(self._probe_and_notify(ep))
                self._probes.add(task)
                task.add_done_callback(self._probes.discard)

    async def _probe_and_notify(self, ep: _Endpoint) -> None:
        await self._probe(ep)
        await self._notify()

    async def _probe(self, ep: _Endpoint) -> None:
        """``GET /models``: back in rotation when it serves the fleet's model."""
        ep.probing = True
        try:
            served = await self._ask(ep)
        except _Down as e:
            ep.state.down(time.monotonic(), str(e))
            return
        except ModelLoadError as e:  # its key is refused (or missing): out until fixed
            ep.state.health, ep.state.why_down = "refused", e.message
            return
        finally:
            ep.probing = False
        if self._served is not None and served != self._served:
            ep.state.health = "refused"
            ep.state.why_down = f"now serves {describe(served)}"
            return
        ep.state.back_up()

    async def _probe_all(self) -> None:
        down = [e for e in self.endpoints if e.state.health == "down" and not e.probing]
        await asyncio.gather(*(self._probe(e) for e in down))

    def _all_down(self, why: dict[str, str]) -> ModelLoadError:
        lines = "; ".join(f"{url}: {reason}" for url, reason in why.items())
        return ModelLoadError(
            f"Cannot reach any of the fleet's {len(why)} endpoints ({lines}). "
            "Is the server running?",
            hint="Start the servers or fix the URLs (--base-url, --fleet). A run that had "
            "started keeps what it stored: `calipers run --resume RUN` finishes it, on this "
            "fleet or another of the same model.",
        )

    # -- one request, with failover ----------------------------------------------------------

    async def _call(self, op: Callable[[OpenAIModel], Awaitable[T]]) -> T:
        if self._identity is None:  # first use: every endpoint must serve the same model
            self.identity()
        calls = current_calls()
        budget = self.options.max_retries + 1 + len(self.endpoints)  # + one failover each
        overloads = 0
        for attempt in range(1, budget + 1):
            ep = await self._acquire()
            epoch = ep.state.epoch
            seen: list[Attempt] = []
            token = _attempts.set(seen)
            try:
                result = await op(ep.model)
            except (ModelCallError, ModelLoadError) as e:
                last = seen[-1] if seen else None
                if last is None or last.outcome not in _FAILOVER:
                    raise  # not the endpoint's health: the request itself (4xx, a bad key)
                reason, wait = self._failed(ep, last, epoch, e, overloads)
                overloads += wait > 0
                if attempt == budget:
                    raise ModelCallError(
                        f"The fleet failed this request {attempt} times; the last: {reason}",
                        hint="The servers are overloaded or failing; retry later or lower "
                        "--concurrency.",
                    ) from None
                if calls is not None:
                    calls.retry(
                        Retry(attempt, budget, wait, reason, last.outcome == "rate_limited")
                    )
            else:
                latency = seen[-1].latency_s if seen else None
                ep.state.succeeded(latency, epoch)
                return result
            finally:
                _attempts.reset(token)
                ep.state.in_flight -= 1
                await self._notify()
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _failed(
        self, ep: _Endpoint, last: Attempt, epoch: int, e: Exception, overloads: int
    ) -> tuple[str, float]:
        """Feed the endpoint's window; the reason to report and the wait before the retry."""
        reason = f"{ep.url}: {e}"
        if last.outcome == "refused":
            if ep.state.health == "up":
                ep.state.down(time.monotonic(), "connection refused")
            return f"{ep.url} is down, retrying on another endpoint", 0.0
        if last.outcome == "rate_limited":
            ep.state.throttled(epoch)
        elif ep.state.failed(epoch, timeout=last.outcome == "timeout") and ep.state.health == "up":
            ep.state.down(time.monotonic(), f"{ep.state.failures} failures in a row, the last: {e}")
            return f"{ep.url} is down after repeated failures, retrying elsewhere", 0.0
        if last.outcome == "dropped":
            return reason, 0.0
        wait = self.backoff_base_s * 2.0**overloads * (1.0 + 0.25 * self._rng.random())
        return reason, min(wait, MAX_DELAY_S)

    # -- the provider API: every call goes to an endpoint's OpenAIModel -----------------------

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return await self._call(lambda m: m.generate(request))

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        return await self._call(lambda m: m.loglikelihood(request))

    async def score_continuations(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        return await self._call(lambda m: m.score_continuations(request))

    async def token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        return await self._call(lambda m: m.token_stats(request))

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        return self.endpoints[0].model.render_chat(messages)

    def count_tokens(self, text: str) -> int:
        return self.endpoints[0].model.count_tokens(text)

    def context_window(self) -> int | None:
        return self.endpoints[0].model.context_window()

    def tool_format(self) -> str | None:
        return self.endpoints[0].model.tool_format()

    def summary(self) -> list[dict[str, Any]]:
        """Each endpoint's state and counts (tests, benchmarks, a progress display)."""
        return [
            {
                "url": e.url,
                "health": e.state.health,
                "window": round(e.state.window, 2),
                "in_flight": e.state.in_flight,
                "served": e.state.served,
                "rate_limited": e.state.rate_limited,
                "cuts": e.state.cuts,
                "went_down": e.state.went_down,
            }
            for e in self.endpoints
        ]

    async def aclose(self) -> None:
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*self._probes, return_exceptions=True)
        for ep in self.endpoints:
            await ep.model.aclose()

"""Any OpenAI-compatible server: vLLM, llama.cpp server, Ollama, TGI, hosted APIs.

``openai:MODEL`` with ``--base-url URL`` (default https://api.openai.com/v1). The API key is
read from the environment variable named by ``--api-key-env`` (default ``OPENAI_API_KEY``) at
each call; it is never stored in the identity, logs or error messages. Servers on a loopback
address may run without a key.

Chat requests go to ``POST /chat/completions``, plain prompts to ``POST /completions``. A
request with tools sends them in the OpenAI tools format and reads the reply's ``tool_calls``
(``_openai_tools``: arguments that are not a JSON object become a call with an error, never a
crash). At most
``concurrency`` requests are in flight (default 4). Each attempt may take at most
``timeout_s`` seconds in all (default 120; ``--timeout``), however slowly the server trickles
its answer. 429, 5xx, timeouts and dropped connections are retried up to ``max_retries`` times
(default 4; ``--max-retries``) with exponential backoff and jitter, honouring ``Retry-After``;
every attempt and retry is reported to the caller's call tracker (``track_calls``). Other 4xx
answers fail at once with the server's message. A server that was never reached fails at once
("Is the server running?") instead of being retried.

Log-likelihoods go through ``/completions`` with ``echo`` and ``logprobs``, verified on first
use; a server that fails the check is refused (``_openai_loglik``, ``docs/models.md``).
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from calipers.errors import ModelCallError, ModelLoadError
from calipers.models import _openai_loglik
from calipers.models._base import ModelOptions, ModelProvider
from calipers.models._calls import Retry, current_calls
from calipers.models._openai_tools import parse_tool_calls, wire_messages, wire_tools
from calipers.types import (
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    ToolCall,
)

__all__ = ["DEFAULT_BASE_URL", "Attempt", "OpenAIModel", "is_loopback", "openai_from_spec"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_CONCURRENCY = 4
MAX_DELAY_S = 60.0


def openai_from_spec(rest: str, options: ModelOptions) -> OpenAIModel:
    return OpenAIModel(rest, options)


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _retry_after(resp: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), or None."""
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(resp: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, FastAPI or plain text)."""
    try:
        body = resp.json()
    except ValueError:
        return resp.text.strip()[:500] or resp.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body.get("detail"))
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if err:
            return str(err)[:500]
    return str(body)[:500]


def _not_json(resp: httpx.Response) -> str:
    """What a 200 answer that is not JSON was, for the error message."""
    kind = resp.headers.get("content-type", "no content-type").split(";")[0]
    if "html" in kind or resp.text.lstrip()[:1] == "<":
        return (
            f"an HTML page ({kind}), not an OpenAI-compatible API; does --base-url point "
            "at the API root (often ending in /v1)?"
        )
    return f"invalid JSON ({kind}: {resp.text.strip()[:80]!r})"


Outcome = Literal["ok", "rate_limited", "server_error", "timeout", "refused", "dropped", "rejected"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """How one HTTP attempt ended, for whoever steers load (a fleet, ``_fleet``): ``ok``,
    ``rate_limited`` (429), ``server_error`` (5xx), ``timeout``, ``refused`` (nothing listens),
    ``dropped`` (the connection broke), ``rejected`` (another 4xx or an unreadable body: the
    server is up). ``latency_s``: how long the attempt took."""

    outcome: Outcome
    latency_s: float


class _Retryable(Exception):
    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        *,
        rate_limited: bool = False,
        outcome: Outcome = "server_error",
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.outcome = outcome


class OpenAIModel(ModelProvider):
    """A model behind an OpenAI-compatible HTTP API."""

    provider_name = "openai"
    supports_loglikelihood = True
    default_concurrency = DEFAULT_CONCURRENCY

    def __init__(
        self,
        model: str,
        options: ModelOptions | None = None,
        *,
        backoff_base_s: float = 0.5,
        jitter_seed: int = 0,
        tool_choice: str | dict[str, Any] | None = None,
    ) -> None:
        """``tool_choice`` is sent with requests that have tools (``"required"``, ``"none"``,
        or ``{"type": "function", "function": {"name": ...}}`` to force one tool); None leaves
        it to the server (``auto``). It changes answers, so the identity records it."""
        self.model = model
        self.tool_choice = tool_choice
        self.options = options or ModelOptions()
        self.base_url = (self.options.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.concurrency = self.options.concurrency or DEFAULT_CONCURRENCY
        self.backoff_base_s = backoff_base_s
        self._rng = random.Random(jitter_seed)
        self._reached = False  # has the server answered at least once?
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._identity: ModelIdentity | None = None
        # hears how every attempt ended (a fleet's load control); None: nobody listens
        self.on_attempt: Callable[[Attempt], None] | None = None
        self._loglik = _openai_loglik.LoglikState()  # the server's verified log-likelihoods

    # -- identity ----------------------------------------------------------------------------

    def identity(self) -> ModelIdentity:
        """Asks ``GET /models`` once: ``api_model`` is the requested model when the server lists
        it, or the one model a single-model server (llama.cpp, vLLM) lists."""
        if self._identity is None:
            self._identity = ModelIdentity(
                provider="openai",
                name=self.model,
                api_model=self._fetch_api_model(),
                base_url=self.base_url,
                extra={}
                if self.tool_choice is None
                else {"tool_choice": json.dumps(self.tool_choice, sort_keys=True)},
            )
        return self._identity

    def _fetch_api_model(self) -> str | None:
        timeout = min(self.options.timeout_s, 10.0)
        try:
            resp = httpx.get(f"{self.base_url}/models", headers=self._headers(), timeout=timeout)
        except httpx.TransportError as e:
            raise self._unreachable(e) from None
        self._reached = True
        if resp.status_code in (401, 403):
            raise ModelLoadError(
                f"{self.base_url} refused the API key from ${self.options.api_key_env} "
                f"({resp.status_code}: {_server_message(resp)}).",
                hint=f"Check the key in ${self.options.api_key_env}.",
            )
        if resp.status_code != 200:
            return None
        try:
            data = resp.json().get("data") or []
            ids = [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
        except (ValueError, AttributeError):
            return None
        if self.model in ids:
            return self.model
        return ids[0] if len(ids) == 1 else None

    # -- HTTP --------------------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.options.api_key_env)
        if key:
            return {"Authorization": f"Bearer {key}"}
        if is_loopback(self.base_url):
            return {}
        raise ModelLoadError(
            f"No API key for {self.base_url}: the environment variable "
            f"{self.options.api_key_env} is not set.",
            hint=f"export {self.options.api_key_env}=... (or --api-key-env NAME for another "
            "variable).",
        )

    def _unreachable(self, e: Exception) -> ModelLoadError:
        return ModelLoadError(
            f"Cannot reach {self.base_url} ({type(e).__name__}: {e}). Is the server running?",
            hint="Check --base-url, and that the server listens on that host and port.",
        )

    def _ensure_client(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            # A client belongs to one event loop; a new loop (a new asyncio.run) gets its own.
            self._client = httpx.AsyncClient(
                timeout=self.options.timeout_s,
                limits=httpx.Limits(max_connections=self.concurrency),
            )
            self._semaphore = asyncio.Semaphore(self.concurrency)
            self._loop = loop
        return self._client, self._semaphore

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        backoff = self.backoff_base_s * 2.0**attempt * (1.0 + 0.25 * self._rng.random())
        if retry_after is not None:
            backoff = max(backoff, retry_after)
        return min(backoff, MAX_DELAY_S)

    async def _post(self, path: str, payload: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """POST with retries; returns the JSON body and the latency of the successful try."""
        client, semaphore = self._ensure_client()
        url = f"{self.base_url}{path}"
        calls = current_calls()
        attempts = self.options.max_retries + 1
        async with semaphore:
            for attempt in range(attempts):
                if calls is not None:
                    calls.attempt()
                try:
                    return await self._try_post(client, url, payload)
                except _Retryable as e:
                    if attempt == self.options.max_retries:
                        raise ModelCallError(
                            f"{url} failed after {attempt + 1} attempts: {e}",
                            hint="The server is overloaded or failing; retry later or lower "
                            "--concurrency.",
                        ) from None
                    wait = self._delay(attempt, e.retry_after)
                    if calls is not None:
                        calls.retry(Retry(attempt + 1, attempts, wait, str(e), e.rate_limited))
                    await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _try_post(
        self, client: httpx.AsyncClient, url: str, payload: dict[str, Any]
    ) -> tuple[dict[str, Any], float]:
        headers = self._headers()
        start = time.perf_counter()
        outcome: Outcome = "rejected"
        try:
            result = await self._attempt(client, url, payload, headers, start)
            outcome = "ok"
            return result
        except _Retryable as e:
            outcome = e.outcome
            raise
        except ModelLoadError:  # never reached: nothing listens
            outcome = "refused"
            raise
        finally:
            if self.on_attempt is not None:
                self.on_attempt(Attempt(outcome, time.perf_counter() - start))

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        url: str,
        payload: dict[str, Any],
        headers: dict[str, str],
        start: float,
    ) -> tuple[dict[str, Any], float]:
        try:  # httpx's timeout bounds each read; this bounds the whole attempt
            async with asyncio.timeout(self.options.timeout_s):
                resp = await client.post(url, json=payload, headers=headers)
        except (httpx.TimeoutException, TimeoutError):
            raise _Retryable(
                f"no answer within the {self.options.timeout_s:g} s timeout (--timeout)",
                outcome="timeout",
            ) from None
        except httpx.TransportError as e:
            if not self._reached:
                raise self._unreachable(e) from None
            raise _Retryable(
                f"connection error ({type(e).__name__}: {e})",
                outcome="refused" if isinstance(e, httpx.ConnectError) else "dropped",
            ) from None
        latency = time.perf_counter() - start
        self._reached = True
        if resp.status_code == 429 or resp.status_code >= 500:
            raise _Retryable(
                f"HTTP {resp.status_code}: {_server_message(resp)}",
                _retry_after(resp),
                rate_limited=resp.status_code == 429,
                outcome="rate_limited" if resp.status_code == 429 else "server_error",
            )
        if resp.status_code != 200:
            raise ModelCallError(
                f"{url} rejected the request (HTTP {resp.status_code}): {_server_message(resp)}"
            )
        try:
            body = resp.json()
        except ValueError:
            raise ModelCallError(f"{url} answered with {_not_json(resp)}") from None
        if not isinstance(body, dict) or not body.get("choices"):
            raise ModelCallError(f"{url} answered without choices: {str(body)[:200]}")
        return body, latency

    # -- the provider API --------------------------------------------------------------------

    async def generate(self, request: ModelRequest) -> ModelResponse:
        p = request.params
        payload: dict[str, Any] = {
            "model": self.model,
            "max_tokens": p.max_tokens,
            "temperature": p.temperature,
            "top_p": p.top_p,
        }
        if p.stop:
            payload["stop"] = list(p.stop)
        if p.seed is not None:
            payload["seed"] = p.seed
        if p.logprobs:
            payload["logprobs"] = True if request.messages is not None else 1
        calls: tuple[ToolCall, ...] = ()
        if request.messages is not None:
            payload["messages"] = wire_messages(request.messages)
            if request.tools:
                payload["tools"] = wire_tools(request.tools)
                if self.tool_choice is not None:
                    payload["tool_choice"] = self.tool_choice
            body, latency = await self._post("/chat/completions", payload)
            choice = body["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or ""
            calls = parse_tool_calls(message) if isinstance(message, dict) else ()
        else:
            payload["prompt"] = request.prompt
            body, latency = await self._post("/completions", payload)
            choice = body["choices"][0]
            text = choice.get("text") or ""
        usage = body.get("usage") or {}
        return ModelResponse(
            text=text,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            tool_calls=calls,
            token_logprobs=_token_logprobs(choice) if p.logprobs else (),
        )

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        return await _openai_loglik.score(self, request)

    def loglikelihood_refusal(self) -> str | None:
        return _openai_loglik.refusal(self)

    def runtime(self) -> dict[str, int | str]:
        return _openai_loglik.record(self)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            if self._loop is asyncio.get_running_loop():
                await client.aclose()


def _token_logprobs(choice: dict[str, Any]) -> tuple[float, ...]:
    """Each generated token's log-probability: ``logprobs.content[].logprob`` (chat) or
    ``logprobs.token_logprobs`` (completions); empty when the server gave none."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return ()
    if isinstance(lp.get("content"), list):
        values = [t.get("logprob") for t in lp["content"] if isinstance(t, dict)]
    else:
        values = list(lp.get("token_logprobs") or [])
    return tuple(float(v) for v in values if isinstance(v, int | float))

"""A deterministic model for tests and for measuring the harness itself.

Spec forms (``--model fake:...``):

- ``fake:echo`` answers with the last user message (or the prompt).
- ``fake:const=TEXT`` always answers ``TEXT``.
- ``fake:script=FILE`` answers from a JSON object ``{"substring": "answer", ...}``: the first
  key found in the prompt wins; ``"*"`` is the fallback.
- ``fake:cycle=A|B|C`` answers A, B, C, A, ... in call order.

Options after a comma: ``fail=0.1`` (a deterministic share of requests raises, by hash of the
request), ``delay=0.01`` (seconds per call), ``name=NAME`` (the identity name).
Log-likelihoods are deterministic functions of (context, continuation).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from calipers.errors import ConfigError, ModelCallError
from calipers.models._base import ModelOptions, ModelProvider
from calipers.types import (
    ChatMessage,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
)

__all__ = ["FakeModel", "fake_from_spec"]

Responder = Callable[[ModelRequest], str]
Scorer = Callable[[str, str], float]


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from text."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def _prompt_text(request: ModelRequest) -> str:
    if request.messages is not None:
        users = [m.content for m in request.messages if m.role == "user"]
        return users[-1] if users else ""
    return request.prompt or ""


def default_loglik(context: str, continuation: str) -> float:
    """Deterministic, roughly length-proportional negative log-probability."""
    return -(0.5 + 2.0 * _unit(context + "\x00" + continuation)) * max(1, len(continuation.split()))


class FakeModel(ModelProvider):
    """Answers with ``responder(request)``; no randomness, no network, no weights."""

    provider_name = "fake"
    supports_loglikelihood = True
    default_concurrency = 8

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        name: str = "echo",
        loglik: Scorer = default_loglik,
        fail_rate: float = 0.0,
        delay_s: float = 0.0,
    ) -> None:
        self._responder = responder or _prompt_text
        self._name = name
        self._loglik = loglik
        self._fail_rate = fail_rate
        self._delay_s = delay_s
        self.calls = 0

    def identity(self) -> ModelIdentity:
        extra = {"fail_rate": str(self._fail_rate)} if self._fail_rate else {}
        return ModelIdentity(provider="fake", name=self._name, extra=extra)

    def _maybe_fail(self, key: str) -> None:
        if self._fail_rate and _unit("fail\x00" + key) < self._fail_rate:
            raise ModelCallError("fake model: injected failure")

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        start = time.perf_counter()
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        self._maybe_fail(request.model_dump_json())
        text = self._responder(request)
        stops = [text.find(s) for s in request.params.stop if s and s in text]
        if stops:
            text = text[: min(stops)]
        prompt = _prompt_text(request) if request.messages is None else " ".join(
            m.content for m in request.messages
        )
        return ModelResponse(
            text=text,
            input_tokens=len(prompt.split()),
            output_tokens=len(text.split()),
            latency_s=time.perf_counter() - start,
            finish_reason="stop",
        )

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        self.calls += 1
        start = time.perf_counter()
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        self._maybe_fail(request.model_dump_json())
        lps = tuple(self._loglik(request.context, c) for c in request.continuations)
        best = max(range(len(lps)), key=lps.__getitem__) if lps else -1
        n_tok = tuple(max(1, len(c.split())) for c in request.continuations)
        ctx = len(request.context.split())
        return LoglikelihoodResult(
            logprobs=lps,
            is_greedy=tuple(i == best for i in range(len(lps))),
            n_tokens=n_tok,
            tokens_evaluated=ctx + sum(n_tok),
            input_tokens=ctx,
            latency_s=time.perf_counter() - start,
        )

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        parts = [f"<|{m.role}|>\n{m.content}" for m in messages]
        return "\n".join([*parts, "<|assistant|>\n"])


def _script_responder(path: str) -> Responder:
    p = Path(path)
    try:
        table = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"Fake model script {path!r} does not exist.") from None
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"Fake model script {path}: not valid JSON ({e.msg}, line {e.lineno})."
        ) from None
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise ConfigError(
            f"Fake model script {path}: expected a JSON object of substring -> answer strings."
        )
    answers: dict[str, str] = dict(table)
    fallback = answers.pop("*", "")

    def respond(request: ModelRequest) -> str:
        text = _prompt_text(request)
        for key, answer in answers.items():
            if key in text:
                return answer
        return fallback

    return respond


def fake_from_spec(rest: str, options: ModelOptions) -> FakeModel:
    head, *opts = rest.split(",")
    mode, _, value = head.partition("=")
    responder: Responder
    if mode == "echo":
        responder = _prompt_text
    elif mode == "const":
        responder = lambda _r: value  # noqa: E731
    elif mode == "script":
        responder = _script_responder(value)
    elif mode == "cycle":
        answers = itertools.cycle(value.split("|"))
        responder = lambda _r: next(answers)  # noqa: E731
    else:
        raise ConfigError(
            f"Unknown fake model mode {mode!r}.",
            hint="Use fake:echo, fake:const=TEXT, fake:script=FILE or fake:cycle=A|B.",
        )
    rates = {"fail": 0.0, "delay": 0.0}
    name = head
    for opt in opts:
        k, _, v = opt.partition("=")
        try:
            if k in rates:
                rates[k] = float(v)
            elif k == "name":
                name = v
            else:
                raise ConfigError(f"Unknown fake model option {k!r} (use fail=, delay=, name=).")
        except ValueError:
            raise ConfigError(f"Fake model option {k}={v!r} is not a number.") from None
    if not 0.0 <= rates["fail"] <= 1.0:
        raise ConfigError(f"Fake model option fail={rates['fail']:g} must be between 0 and 1.")
    if rates["delay"] < 0:
        raise ConfigError(f"Fake model option delay={rates['delay']:g} must not be negative.")
    return FakeModel(responder, name=name, fail_rate=rates["fail"], delay_s=rates["delay"])

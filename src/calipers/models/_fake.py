"""A deterministic model for tests and for measuring the harness itself.

Spec forms (``--model fake:...``):

- ``fake:echo`` answers with the last user message (or the prompt).
- ``fake:const=TEXT`` always answers ``TEXT``.
- ``fake:script=FILE`` answers from a JSON object ``{"substring": "answer", ...}``: the first
  key found in the prompt wins; ``"*"`` is the fallback.
- ``fake:cycle=A|B|C`` answers A, B, C, A, ... in call order.
- ``fake:sample=A|B|C`` samples one of A, B, C by a hash of the request's seed and prompt
  (repeat an option to weight it): requests with different seeds sample, the same request
  always gets the same answer. ``{h}`` in an option becomes a short hash of the prompt, so
  every prompt gets its own answers (fingerprint tests).
- ``fake:tools=FILE`` scripts tool calls: a JSON object ``{"substring": reply, ...}`` as for
  ``script=``, where a reply is a text or a list of calls ``[{"name": ..., "arguments":
  {...}}]`` (``"arguments"`` may be a string: calls whose arguments did not parse).

Options after a comma: ``fail=0.1`` (a deterministic share of requests raises, by hash of the
request), ``delay=0.01`` (seconds per call), ``name=NAME`` (the identity name),
``memorise=FILE`` (texts the model has "memorised": a JSON list of strings, or JSONL of strings
or ``{"text": ...}`` objects), ``loglik=off`` (no log-likelihoods or token statistics, like an
API model), ``window=4096`` (the context window, in the fake model's tokens: whitespace-separated
words). Log-likelihoods are deterministic functions of (context, continuation).

Token statistics (``token_stats``) split text into words (with their leading whitespace) and
draw each word's standardised log-probability ``z = (logprob - mean) / std`` from a
deterministic pseudo-normal; words inside an occurrence of a memorised text get ``z`` near
``MEMORISED_Z`` instead, so memorised texts score high on Min-K%++. Generation recalls a
memorised text when the prompt (or last user message) contains its beginning, at least
``MIN_CUE`` characters of it, running up to the end of the prompt (the answer is the rest of the
text) or up to the last ``[MASK]`` (the answer is the rest of that line: the masked option).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import re
import statistics
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
    TokenStatsRequest,
    TokenStatsResult,
    ToolCall,
)

__all__ = ["MASK", "MEMORISED_Z", "MIN_CUE", "FakeModel", "fake_from_spec", "load_texts"]

MASK = "[MASK]"
MEMORISED_Z = 2.5  # z of a memorised word (plus up to +-0.25); others are clipped to +-2.5
MIN_CUE = 12  # characters of a memorised text's beginning that cue its recall
_NORMAL = statistics.NormalDist()
_WORD = re.compile(r"\s*\S+")

# A responder answers with text, or with a whole response (an agent's tool calls).
Responder = Callable[[ModelRequest], "str | ModelResponse"]
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
    supports_token_stats = True
    default_concurrency = 8

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        name: str = "echo",
        loglik: Scorer = default_loglik,
        fail_rate: float = 0.0,
        delay_s: float = 0.0,
        memorised: Sequence[str] = (),
        loglikelihood: bool = True,
        window: int = 4096,
    ) -> None:
        if not loglikelihood:  # a model that only generates, as an API model does
            self.supports_loglikelihood = self.supports_token_stats = False
        self._responder = responder or _prompt_text
        self._name = name
        self._loglik = loglik
        self._fail_rate = fail_rate
        self._delay_s = delay_s
        self._memorised = tuple(t for t in memorised if t)
        self._window = window
        self.calls = 0

    def identity(self) -> ModelIdentity:
        extra = {"fail_rate": str(self._fail_rate)} if self._fail_rate else {}
        if self._memorised:
            extra["memorised"] = f"{len(self._memorised)}:{_digest(self._memorised)}"
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
        recalled = self._recall_answer(_prompt_text(request))
        answer = self._responder(request) if recalled is None else recalled
        calls = answer.tool_calls if isinstance(answer, ModelResponse) else ()
        text = answer.text if isinstance(answer, ModelResponse) else answer
        stops = [text.find(s) for s in request.params.stop if s and s in text]
        if stops:
            text = text[: min(stops)]
        prompt = (
            _prompt_text(request)
            if request.messages is None
            else " ".join(m.content for m in request.messages)
        )
        return ModelResponse(
            text=text,
            input_tokens=len(prompt.split()),
            output_tokens=len(text.split()),
            latency_s=time.perf_counter() - start,
            finish_reason="tool_calls" if calls else "stop",
            tool_calls=calls,
        )

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        if not self.supports_loglikelihood:
            return await super().loglikelihood(request)  # raises NotSupportedError
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

    async def token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        if not self.supports_token_stats:
            return await super().token_stats(request)  # raises NotSupportedError
        self.calls += 1
        start = time.perf_counter()
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        self._maybe_fail(request.model_dump_json())
        text = request.text
        inside = _memorised_chars(text, self._memorised)
        tokens, lps, mus, sds = [], [], [], []
        for match in _WORD.finditer(text):
            token, end = match.group(), match.end()
            key = text[:end]
            mu = -(4.0 + 4.0 * _unit("mu\x00" + key))
            sd = 0.5 + 0.75 * _unit("sd\x00" + key)
            u = _unit("z\x00" + key)
            if all(inside[end - len(token.lstrip()) : end]):
                z = MEMORISED_Z + 0.5 * (u - 0.5)
            else:
                z = max(-2.5, min(2.5, _NORMAL.inv_cdf(min(max(u, 1e-9), 1 - 1e-9))))
            tokens.append(token)
            lps.append(mu + sd * z)
            mus.append(mu)
            sds.append(sd)
        return TokenStatsResult(
            tokens=tuple(tokens),
            logprobs=tuple(lps),
            mean_logprob=tuple(mus),
            std_logprob=tuple(sds),
            tokens_evaluated=len(tokens) + 1,
            latency_s=time.perf_counter() - start,
        )

    def _recall_answer(self, prompt: str) -> str | None:
        """A memorised text's continuation, when the prompt cues it (see the module doc)."""
        if not self._memorised:
            return None
        mask = prompt.rfind(MASK)
        if mask < 0:
            return _recall(prompt, self._memorised)
        rest = _recall(prompt[:mask], self._memorised)
        if rest is None:
            return None
        line = rest.split("\n", 1)[0]
        after = prompt[mask + len(MASK) :].split("\n", 1)[0]
        return line[: line.find(after)] if after and after in line else line

    def count_tokens(self, text: str) -> int:
        """Whitespace-separated words: the fake model's "tokens" (as in its token counts)."""
        return len(text.split())

    def context_window(self) -> int:
        return self._window

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        parts = [f"<|{m.role}|>\n{m.content}" for m in messages]
        return "\n".join([*parts, "<|assistant|>\n"])


def _digest(texts: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]


def _memorised_chars(text: str, memorised: Sequence[str]) -> list[bool]:
    """Per character of ``text``: whether it lies inside an occurrence of a memorised text."""
    inside = [False] * len(text)
    for m in memorised:
        at = text.find(m)
        while at >= 0:
            inside[at : at + len(m)] = [True] * len(m)
            at = text.find(m, at + 1)
    return inside


def _recall(before: str, memorised: Sequence[str]) -> str | None:
    """The rest of the memorised text whose beginning (``MIN_CUE`` characters or more) ends
    ``before``; None when no memorised text is cued."""
    for m in memorised:
        if len(m) <= MIN_CUE:
            continue
        at = before.rfind(m[:MIN_CUE])
        while at >= 0:
            seen = before[at:]
            if len(seen) < len(m) and m.startswith(seen):
                return m[len(seen) :]
            at = before.rfind(m[:MIN_CUE], 0, at)
    return None


def load_texts(path: str) -> list[str]:
    """Texts from a JSON list of strings, or JSONL of strings or ``{"text": ...}`` objects."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"Memorised-texts file {path!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(
            f"Memorised-texts file {path!r} cannot be read as UTF-8 text ({e})."
        ) from None
    try:
        if p.suffix == ".jsonl":
            values = [json.loads(line) for line in raw.splitlines() if line.strip()]
        else:
            values = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"Memorised-texts file {path}: not valid JSON ({e.msg}, line {e.lineno})."
        ) from None
    if not isinstance(values, list):
        values = [values]
    texts = [v.get("text") if isinstance(v, dict) else v for v in values]
    if not all(isinstance(t, str) for t in texts):
        raise ConfigError(
            f'Memorised-texts file {path}: expected strings or {{"text": ...}} objects.',
            hint="A JSON list of strings, or one JSON string or object per line (.jsonl).",
        )
    return [t for t in texts if isinstance(t, str)]


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


def _tool_reply(value: object, path: str) -> str | ModelResponse:
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in value
    ):
        raise ConfigError(
            f"Fake model tools script {path}: a reply is a text or a list of "
            '{"name": ..., "arguments": {...}} calls.'
        )
    calls = []
    for i, c in enumerate(value):
        args = c.get("arguments", {})
        if isinstance(args, dict):
            calls.append(ToolCall(id=f"fake_{i}", name=c["name"], arguments=args))
        else:
            err = "the arguments are not a JSON object"
            calls.append(ToolCall(id=f"fake_{i}", name=c["name"], raw=str(args), error=err))
    return ModelResponse(text="", tool_calls=tuple(calls))


def _tools_responder(path: str) -> Responder:
    try:
        table = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(
            f"Fake model tools script {path!r} cannot be read as JSON ({e})."
        ) from None
    if not isinstance(table, dict):
        raise ConfigError(f"Fake model tools script {path}: expected a JSON object.")
    replies = {k: _tool_reply(v, path) for k, v in table.items()}
    fallback = replies.pop("*", "")

    def respond(request: ModelRequest) -> str | ModelResponse:
        text = _prompt_text(request)
        return next((r for k, r in replies.items() if k in text), fallback)

    return respond


def _sample_responder(options: Sequence[str]) -> Responder:
    def respond(request: ModelRequest) -> str:
        prompt = _prompt_text(request)
        u = _unit(f"sample\x00{request.params.seed}\x00{prompt}")
        option = options[min(len(options) - 1, int(u * len(options)))]
        return option.replace("{h}", hashlib.sha256(prompt.encode()).hexdigest()[:8])

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
    elif mode == "tools":
        responder = _tools_responder(value)
    elif mode == "sample":
        responder = _sample_responder(value.split("|"))
    else:
        raise ConfigError(
            f"Unknown fake model mode {mode!r}.",
            hint="Use fake:echo, fake:const=TEXT, fake:script=FILE, fake:cycle=A|B, "
            "fake:sample=A|B or fake:tools=FILE.",
        )
    rates = {"fail": 0.0, "delay": 0.0}
    name = head
    memorised: list[str] = []
    loglik = True
    window = 4096
    for opt in opts:
        k, _, v = opt.partition("=")
        try:
            if k in rates:
                rates[k] = float(v)
            elif k == "name":
                name = v
            elif k == "memorise":
                memorised = load_texts(v)
            elif k == "loglik":
                if v not in ("on", "off"):
                    raise ConfigError(f"Fake model option loglik={v!r}: use on or off.")
                loglik = v == "on"
            elif k == "window":
                window = int(v)
                if window < 1:
                    raise ConfigError(f"Fake model option window={window} must be positive.")
            else:
                raise ConfigError(
                    f"Unknown fake model option {k!r} (use fail=, delay=, name=, memorise=, "
                    "loglik=off, window=)."
                )
        except ValueError:
            raise ConfigError(f"Fake model option {k}={v!r} is not a number.") from None
    if not 0.0 <= rates["fail"] <= 1.0:
        raise ConfigError(f"Fake model option fail={rates['fail']:g} must be between 0 and 1.")
    if rates["delay"] < 0:
        raise ConfigError(f"Fake model option delay={rates['delay']:g} must not be negative.")
    return FakeModel(
        responder,
        name=name,
        fail_rate=rates["fail"],
        delay_s=rates["delay"],
        memorised=memorised,
        loglikelihood=loglik,
        window=window,
    )

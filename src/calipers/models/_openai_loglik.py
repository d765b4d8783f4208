"""Log-likelihoods through an OpenAI-compatible server, verified before they are trusted.

Scoring: each option's prompt ``context + continuation`` goes to ``POST /completions`` with
``echo: true, logprobs: 1, max_tokens: 1, temperature: 0`` (``max_tokens: 0`` means "no limit"
to llama-cpp-python's server). The server tokenizes the text itself; the continuation's tokens
are found from the echoed ``text_offset``s. Tokenization follows lm-evaluation-harness as the
llamacpp provider does: trailing whitespace of the context moves to the continuation, so the
boundary is at ``len(context.rstrip())``. A token that starts before the boundary and ends after
it (it straddles: "...fo" + "o bar" read as "foo", " bar") is counted with the continuation,
since it carries the continuation's first characters; its log-probability is conditioned on the
context before it only. Such tokens are counted on the provider (``runtime()``) and the docs
say so. The value of a continuation is the sum of its tokens' log-probabilities; it is greedy
when each of its tokens is the most likely one at its position (its log-probability is the
top one the server lists). An empty continuation is 0.0 and greedy, as in llamacpp. The first
token of a prompt has no log-probability (nothing precedes it), so a continuation of an empty
context cannot be scored and fails with what to do. A server that rejects ``echo`` with a 4xx
is asked for vLLM's ``prompt_logprobs: 1`` instead (found during verification, checked the
same way).

Prefix sharing: the options of one question go as one request with a list of prompts (at most
``MAX_PROMPTS`` per request), so a server with a prefix cache (vLLM, llama.cpp) evaluates the
shared context once. A server that rejects a list (llama-cpp-python's answers HTTP 500) is found
during verification and gets one prompt per request.

Verification, once per provider instance, before the first score (``verify``):

1. generate up to ``PROBE_TOKENS`` greedy tokens after ``PROBE`` with their log-probabilities;
2. echo ``PROBE + generated text`` and check that the echoed tokens reassemble the text with
   consistent offsets, that the first token has no log-probability and every other one has,
   and that each generated token's echoed log-probability equals the one generation gave
   (within ``TOLERANCE`` nats). A server that reads log-probabilities one position off (as
   llama-cpp-python 0.3.36's does for a model without a BOS token) fails the last check, and
   the message says where the generated value went.

A server that fails is refused with :class:`NotSupportedError` naming the defect. The result is
kept on the instance; ``runtime()`` puts its one-line summary in the run's methodology card.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calipers.errors import CalipersError, ModelCallError, ModelLoadError, NotSupportedError
from calipers.types import LoglikelihoodRequest, LoglikelihoodResult

if TYPE_CHECKING:
    from calipers.models._openai import OpenAIModel

__all__ = [
    "MAX_PROMPTS",
    "PROBE",
    "TOLERANCE",
    "Echo",
    "LoglikState",
    "continuation_score",
    "parse_echo",
    "record",
    "refusal",
    "score",
    "verify",
]

log = logging.getLogger(__name__)

PROBE = "The capital of France is Paris. The capital of Italy is"
PROBE_TOKENS = 4
TOLERANCE = 0.05  # nats between a token's generated and echoed log-probability
MAX_PROMPTS = 16  # prompts in one request
STRADDLE_NOTE = (
    "%s: a token straddles the context/continuation boundary (...%r); it is counted with the "
    "continuation (see docs/models.md)"
)
HINT = (
    "Score with the same model file in-process (--model llamacpp:PATH.gguf), or serve it with "
    "a server whose echoed prompt log-probabilities are right (vLLM, or a llama.cpp server "
    "version that fixes it); a generation formulation of the task (--formulation generate) "
    "needs no log-probabilities."
)


@dataclass(frozen=True)
class Echo:
    """One prompt's echoed tokens: text, start offset, log-probability (None: not given) and
    the largest log-probability the server listed at that position (None: none listed)."""

    tokens: tuple[str, ...]
    offsets: tuple[int, ...]
    logprobs: tuple[float | None, ...]
    top: tuple[float | None, ...]

    def upto(self, end: int) -> Echo:
        """The tokens that start before ``end`` (the prompt's own, without generated ones)."""
        n = sum(1 for o in self.offsets if o < end)
        return Echo(self.tokens[:n], self.offsets[:n], self.logprobs[:n], self.top[:n])


class _BadEcho(ModelCallError):
    """The server's answer does not hold what an echo must."""


@dataclass
class LoglikState:
    """What one provider instance knows about its server's log-likelihoods."""

    lock: asyncio.Lock | None = None
    loop: asyncio.AbstractEventLoop | None = None
    summary: str | None = None  # set once verified
    refusal: NotSupportedError | None = None  # set once refused
    reason: str | None = None  # the refusal as a clause, for the runner's fallback note
    lists: bool = True  # does the server take a list of prompts?
    prompt_logprobs: bool = False  # vLLM's prompt_logprobs instead of echo (echo rejected)
    straddled: int = 0  # continuations whose first token began in the context


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def parse_echo(choice: dict[str, Any], prompt: str | None = None) -> Echo:
    """The echoed tokens of one choice: OpenAI's ``logprobs`` (``tokens``, ``text_offset``,
    ``token_logprobs``, ``top_logprobs``), or with ``prompt`` vLLM's ``prompt_logprobs`` of
    that prompt (per token a dict of token id to ``{logprob, rank, decoded_token}``)."""
    if prompt is not None:
        if isinstance(choice.get("prompt_logprobs"), list):
            return _parse_prompt_logprobs(choice["prompt_logprobs"], prompt)
        raise _BadEcho("The server's answer has no prompt_logprobs.", hint=HINT)
    lp = choice.get("logprobs")
    if isinstance(lp, dict) and isinstance(lp.get("token_logprobs"), list):
        tokens = tuple(str(t) for t in lp.get("tokens") or ())
        offsets = tuple(int(o) for o in lp.get("text_offset") or ())
        values = tuple(_float(v) for v in lp["token_logprobs"])
        tops = tuple(
            max((x for x in (_float(v) for v in t.values()) if x is not None), default=None)
            if isinstance(t, dict)
            else None
            for t in (lp.get("top_logprobs") or [None] * len(tokens))
        )
        if not len(tokens) == len(offsets) == len(values) == len(tops):
            raise _BadEcho(
                f"The server's echo has {len(tokens)} tokens, {len(offsets)} offsets, "
                f"{len(values)} log-probabilities and {len(tops)} top log-probabilities; they "
                "must match one to one."
            )
        return Echo(tokens, offsets, values, tops)
    raise _BadEcho(
        "The server's answer has no echoed prompt log-probabilities (no logprobs.token_logprobs "
        "or prompt_logprobs); it does not support echo with logprobs.",
        hint=HINT,
    )


def _parse_prompt_logprobs(entries: list[Any], prompt: str) -> Echo:
    """vLLM's ``prompt_logprobs`` asked with ``prompt_logprobs: 1``: each entry holds the
    prompt token and the top one (one entry when they are the same); the first is None, so
    the first token's text is what of ``prompt`` the others leave."""
    tokens: list[str] = []
    values: list[float | None] = []
    tops: list[float | None] = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry:
            tokens.append("")
            values.append(None)
            tops.append(None)
            continue
        infos = [v for v in entry.values() if isinstance(v, dict)]
        own = infos[0] if len(infos) == 1 else next(i for i in infos if i.get("rank") != 1)
        tokens.append(str(own.get("decoded_token", "")))
        values.append(_float(own.get("logprob")))
        tops.append(max((x for x in (_float(i.get("logprob")) for i in infos) if x), default=None))
    rest = "".join(tokens[1:])
    if tokens and prompt.endswith(rest):
        tokens[0] = prompt[: len(prompt) - len(rest)]
    offsets = [0] * len(tokens)
    for i in range(1, len(tokens)):
        offsets[i] = offsets[i - 1] + len(tokens[i - 1])
    return Echo(tuple(tokens), tuple(offsets), tuple(values), tuple(tops))


def continuation_score(echo: Echo, boundary: int, end: int) -> tuple[float, bool, int, bool]:
    """``(sum of log-probabilities, greedy, n tokens, straddled)`` of the tokens of
    ``echo`` that end after ``boundary`` and start before ``end`` (the prompt's length)."""
    total, greedy, n, straddled = 0.0, True, 0, False
    for tok, off, lp, top in zip(echo.tokens, echo.offsets, echo.logprobs, echo.top, strict=True):
        if off >= end or off + len(tok) <= boundary:
            continue
        if lp is None:
            raise ModelCallError(
                f"The server gave no log-probability for the continuation's token {tok!r} "
                f"(offset {off}): it is the prompt's first token, which nothing precedes, so a "
                "continuation of an empty context cannot be scored through a server.",
                hint="Give the task a context, or score it with --model llamacpp:PATH.gguf.",
            )
        straddled = straddled or off < boundary
        total += lp
        greedy = greedy and (top is None or lp >= top - 1e-6)
        n += 1
    return total, greedy, n, straddled


# -- requests ------------------------------------------------------------------------------------


def _payload(model: OpenAIModel, prompt: str | list[str], **extra: Any) -> dict[str, Any]:
    return {"model": model.model, "prompt": prompt, "temperature": 0.0, **extra}


def _echo_payload(model: OpenAIModel, state: LoglikState, prompts: Sequence[str]) -> dict[str, Any]:
    prompt: str | list[str] = prompts[0] if len(prompts) == 1 else list(prompts)
    if state.prompt_logprobs:
        return _payload(model, prompt, prompt_logprobs=1, logprobs=1, max_tokens=1)
    return _payload(model, prompt, echo=True, logprobs=1, max_tokens=1)


def _parse_all(
    state: LoglikState, body: dict[str, Any], prompts: Sequence[str], url: str
) -> list[Echo]:
    choices = _ordered(body, len(prompts), url)
    if state.prompt_logprobs:
        return [parse_echo(c, p) for c, p in zip(choices, prompts, strict=True)]
    return [parse_echo(c) for c in choices]


def _ordered(body: dict[str, Any], n: int, url: str) -> list[dict[str, Any]]:
    choices = [c for c in body.get("choices") or [] if isinstance(c, dict)]
    if len(choices) != n:
        raise ModelCallError(f"{url} answered {len(choices)} choices for {n} prompts.")
    return sorted(choices, key=lambda c: int(c.get("index", 0)))


async def _echo(
    model: OpenAIModel, state: LoglikState, prompts: Sequence[str]
) -> tuple[list[Echo], int | None, float]:
    """Echoes of ``prompts`` (a list per request when the server takes lists), the prompt
    tokens the server reported and the summed latency."""
    groups = (
        [list(prompts[i : i + MAX_PROMPTS]) for i in range(0, len(prompts), MAX_PROMPTS)]
        if state.lists
        else [[p] for p in prompts]
    )
    answers = [await model._post("/completions", _echo_payload(model, state, g)) for g in groups]
    echoes: list[Echo] = []
    usage: int | None = 0
    for group, (body, _) in zip(groups, answers, strict=True):
        echoes.extend(_parse_all(state, body, group, model.base_url))
        used = (body.get("usage") or {}).get("prompt_tokens")
        usage = None if usage is None or not isinstance(used, int) else usage + used
    return echoes, usage, sum(latency for _, latency in answers)


async def score(model: OpenAIModel, request: LoglikelihoodRequest) -> LoglikelihoodResult:
    """``loglikelihood`` of the openai provider: verify the server once, then score."""
    state = await verify(model)
    context = request.context.rstrip()
    prompts = [request.context + c for c in request.continuations if c]
    echoes, used, latency = await _echo(model, state, prompts) if prompts else ([], 0, 0.0)
    it = iter(zip(prompts, echoes, strict=True))
    logprobs: list[float] = []
    greedy: list[bool] = []
    n_tokens: list[int] = []
    for cont in request.continuations:
        total, is_greedy, n = 0.0, True, 0
        if cont:
            prompt, echo = next(it)
            _check_text(echo.upto(len(prompt)), prompt, model.base_url)
            total, is_greedy, n, straddled = continuation_score(echo, len(context), len(prompt))
            if straddled and not state.straddled:
                log.warning(STRADDLE_NOTE, model.base_url, prompt[len(context) - 8 :][:40])
            state.straddled += straddled
        logprobs.append(total)
        greedy.append(is_greedy)
        n_tokens.append(n)
    return LoglikelihoodResult(
        logprobs=tuple(logprobs),
        is_greedy=tuple(greedy),
        n_tokens=tuple(n_tokens),
        input_tokens=used,
        latency_s=latency,
    )


def _check_text(echo: Echo, text: str, url: str) -> None:
    joined = "".join(echo.tokens)
    offsets = [0, *itertools.accumulate(len(t) for t in echo.tokens)][: len(echo.tokens)]
    if joined != text or list(echo.offsets) != offsets:
        raise ModelCallError(
            f"{url} echoed tokens that do not reassemble the prompt: {joined[:80]!r} with "
            f"offsets {list(echo.offsets)[:12]} for {text[:80]!r}; the continuation's tokens "
            "cannot be found.",
            hint=HINT,
        )


# -- verification --------------------------------------------------------------------------------


async def verify(model: OpenAIModel) -> LoglikState:
    """The instance's verified state; probes the server on the first call (once, even when
    many calls start at the same time) and raises :class:`NotSupportedError` on a defect."""
    state: LoglikState = model._loglik
    if state.summary is None and state.refusal is None:
        loop = asyncio.get_running_loop()
        if state.lock is None or state.loop is not loop:
            state.lock, state.loop = asyncio.Lock(), loop
        async with state.lock:
            if state.summary is None and state.refusal is None:
                try:
                    state.summary = await _probe(model, state)
                except ModelLoadError:  # not reached, no key: not a verdict on the server
                    raise
                except NotSupportedError as e:
                    state.refusal = e
                except ModelCallError as e:
                    state.refusal = _refuse(model, f"the probe failed: {e.message}")
                if state.refusal is not None:
                    state.reason = _reason(model, state.refusal)
    if state.refusal is not None:
        raise state.refusal
    return state


def refusal(model: OpenAIModel) -> str | None:
    """``loglikelihood_refusal`` of the openai provider: verifies the server once (blocking,
    on a thread with its own event loop, so a running loop is not disturbed); None when
    verified, else the defect as a clause."""
    state: LoglikState = model._loglik
    if state.summary is None and state.refusal is None:

        async def check() -> None:
            try:
                await verify(model)
            except NotSupportedError:
                pass
            finally:
                await model.aclose()  # the client belongs to this thread's loop

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, check()).result()
    return state.reason


def _reason(model: OpenAIModel, e: NotSupportedError) -> str:
    detail = e.message.split(" fails calipers' log-likelihood check: ", 1)[-1]
    detail = detail.split(" Its log-likelihoods would be wrong", 1)[0].rstrip(".")
    return f"the server at {model.base_url} fails calipers' log-likelihood check ({detail})"


def record(model: OpenAIModel) -> dict[str, int | str]:
    """What the methodology card records about the check (empty before it ran)."""
    state: LoglikState = model._loglik
    if state.summary:
        return {"loglikelihood": state.summary}
    if state.reason:
        return {"loglikelihood": f"refused: {state.reason}"}
    return {}


def _refuse(model: OpenAIModel, defect: str) -> NotSupportedError:
    return NotSupportedError(
        f"{model.base_url} (model {model.model}) fails calipers' log-likelihood check: "
        f"{defect} Its log-likelihoods would be wrong, so they are not used.",
        hint=HINT,
    )


async def _probe(model: OpenAIModel, state: LoglikState) -> str:
    gen_body, _ = await model._post(
        "/completions", _payload(model, PROBE, max_tokens=PROBE_TOKENS, logprobs=1)
    )
    try:
        gen = parse_echo(gen_body["choices"][0])  # the generated tokens
        if not gen.tokens or any(v is None for v in gen.logprobs):
            raise _BadEcho(f"generation gave no usable log-probabilities ({gen}).")
        echoes = await _probe_echo(model, state, [PROBE + "".join(gen.tokens), PROBE])
    except _BadEcho as e:
        raise _refuse(model, e.message) from None
    # offsets counted here: servers start them at 0 or at len(PROBE)
    starts = [len(PROBE) + sum(len(t) for t in gen.tokens[:i]) for i in range(len(gen.tokens))]
    gen = Echo(gen.tokens, tuple(starts), gen.logprobs, gen.top)
    text = PROBE + "".join(gen.tokens)
    echo = echoes[0].upto(len(text))
    try:
        _check_text(echo, text, model.base_url)
    except CalipersError as e:
        raise _refuse(model, e.message) from None
    if echo.logprobs[0] is not None:
        raise _refuse(
            model,
            f"the echo gives the first token {echo.tokens[0]!r} a log-probability "
            f"({echo.logprobs[0]:.4f}), but nothing precedes it.",
        )
    missing = [i for i, v in enumerate(echo.logprobs[1:], 1) if v is None]
    if missing:
        raise _refuse(model, f"the echo gives no log-probability for tokens {missing}.")
    worst = _compare(model, echo, gen)
    lists = "prompt lists accepted" if state.lists else "one prompt per request"
    if state.prompt_logprobs:
        lists += ", vLLM prompt_logprobs (echo rejected)"
    return (
        f"echo verified: {len(echo.tokens)} probe tokens reassemble the text, the first has no "
        f"log-probability, {len(gen.tokens)} greedy tokens' echoed log-probabilities equal "
        f"generation's (largest difference {worst:.2g} nats); {lists}"
    )


async def _probe_echo(model: OpenAIModel, state: LoglikState, prompts: list[str]) -> list[Echo]:
    """The probe's echoes, finding how the server gives them: ``echo`` or vLLM's
    ``prompt_logprobs`` (when a single echo request is rejected with a 4xx), as a list in one
    request if the server takes one (one try: a server that rejects lists, with a 4xx or a
    5xx, gets one prompt per request)."""
    for prompt_logprobs in (False, True):
        state.prompt_logprobs, state.lists = prompt_logprobs, True
        client, semaphore = model._ensure_client()
        url = f"{model.base_url}/completions"
        try:
            async with semaphore:
                payload = _echo_payload(model, state, prompts)
                body, _ = await model._try_post(client, url, payload)
            return _parse_all(state, body, prompts, url)
        except ModelLoadError:  # not reached, no key: nothing to do with lists
            raise
        except Exception as e:  # a 4xx (ModelCallError), or a 5xx or 429 (openai's _Retryable)
            log.info("%s rejected a list of prompts (%s); one prompt per request", url, e)
        state.lists = False
        try:
            echoes, _, _ = await _echo(model, state, prompts)
            return echoes
        except _BadEcho:
            raise
        except ModelCallError as e:
            if prompt_logprobs or "rejected the request (HTTP 4" not in e.message:
                raise
            log.info("%s rejected echo (%s); trying prompt_logprobs", url, e.message)
    raise AssertionError("unreachable")  # pragma: no cover


def _compare(model: OpenAIModel, echo: Echo, gen: Echo) -> float:
    """Largest |echoed - generated| log-probability over the generated tokens the echo
    tokenized the same way; refuses the server when one differs by more than TOLERANCE."""
    where = {(o, t): i for i, (o, t) in enumerate(zip(echo.offsets, echo.tokens, strict=True))}
    worst, matched = 0.0, 0
    for tok, off, want in zip(gen.tokens, gen.offsets, gen.logprobs, strict=True):
        i = where.get((off, tok))
        got = echo.logprobs[i] if i is not None else None
        if i is None or want is None or got is None:
            continue
        matched += 1
        if abs(got - want) <= TOLERANCE:
            worst = max(worst, abs(got - want))
            continue
        earlier = echo.top[i - 1]
        if earlier is not None and abs(earlier - want) <= TOLERANCE:
            raise _refuse(
                model,
                f"log-probabilities are shifted by one token: generating {tok!r} after the "
                f"probe gave it {want:.4f}, the echo gives it {got:.4f} at its own position "
                f"(token {i + 1}) and the generated value {earlier:.4f} at the position "
                f"before (token {i}, {echo.tokens[i - 1]!r}).",
            )
        raise _refuse(
            model,
            f"generating {tok!r} after the probe gave it log-probability {want:.4f}, but the "
            f"echo of the same text gives {got:.4f} (token {i + 1}).",
        )
    if not matched:
        raise _refuse(
            model,
            "the echo tokenized the generated text differently from generation, so no "
            f"generated token could be compared ({gen.tokens} vs {echo.tokens}).",
        )
    return worst

"""Baseline agents: what an agent task's score must beat before it means anything.

- ``baseline:do-nothing`` replies politely and never calls a tool. A task it passes grades
  nothing the agent did (an audit found such an agent passing 38% of tau-bench airline).
- ``baseline:random-tool`` calls a random tool with random arguments valid for the tool's JSON
  schema, one call a step, then replies. The draw is seeded by a hash of the request (whose
  ``params.seed`` differs per epoch), so a run is reproducible and its epochs differ. String
  arguments are half the time a word already in the conversation (an order id the user
  mentioned), half a random word: a blind agent that still reads the ids it was given.
- ``baseline:oracle`` plays the environment's own ``oracle``: it must pass 100%, or the
  task (its scorer, its oracle or its world) is broken.

Baselines never load weights; their identity is the baseline's name, so their responses cache
and compare like any model's.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from collections.abc import Sequence
from typing import Any

from calipers.errors import ConfigError, NotSupportedError
from calipers.models._base import ModelOptions, ModelProvider
from calipers.types import (
    ChatMessage,
    Environment,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "BASELINES",
    "DO_NOTHING_REPLY",
    "DoNothingAgent",
    "OracleAgent",
    "RandomToolAgent",
    "baseline_from_spec",
    "random_arguments",
]

DO_NOTHING_REPLY = "Thank you for your message. I have not made any changes."
MAX_RANDOM_CALLS = 3  # tool calls per user turn before the random agent replies
# words, ids, emails: "A1" from "order A1.", "x@y.com"; trailing punctuation left off
_WORD = re.compile(r"[A-Za-z0-9#_@\-]+(?:[.:/][A-Za-z0-9#_@\-]+)*")


class _Baseline(ModelProvider):
    provider_name = "baseline"
    default_concurrency = 8
    kind = "abstract"

    def identity(self) -> ModelIdentity:
        return ModelIdentity(provider="baseline", name=self.kind)


class DoNothingAgent(_Baseline):
    """Never calls a tool; every reply is :data:`DO_NOTHING_REPLY`."""

    kind = "do-nothing"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        return ModelResponse(text=DO_NOTHING_REPLY, input_tokens=0, output_tokens=0, latency_s=0.0)


def _rng(request: ModelRequest) -> random.Random:
    digest = hashlib.sha256(request.model_dump_json().encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _words(messages: Sequence[ChatMessage]) -> list[str]:
    return sorted(
        {
            w
            for m in messages
            if m.role in ("user", "tool")
            for w in _WORD.findall(m.content)
            if len(w) > 1
        }
    )


def _random_string(rng: random.Random, words: Sequence[str]) -> str:
    if words and rng.random() < 0.5:
        return rng.choice(list(words))
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 8)))


def random_arguments(
    schema: dict[str, Any], rng: random.Random, words: Sequence[str] = (), depth: int = 0
) -> Any:
    """A random value valid for ``schema`` (the JSON-schema subset tools use: ``type``
    object/array/string/integer/number/boolean/null, ``properties``/``required``, ``items``
    with ``minItems``/``maxItems``, ``enum``, ``const``, ``anyOf``/``oneOf``,
    ``minimum``/``maximum``, ``minLength``/``maxLength``). Required properties are always
    present, optional ones half the time."""
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return random_arguments(rng.choice(list(schema[key])), rng, words, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {}) if depth < 6 else {}
        required = set(schema.get("required", ()))
        return {
            name: random_arguments(sub, rng, words, depth + 1)
            for name, sub in props.items()
            if name in required or rng.random() < 0.5
        }
    if kind == "array":
        lo = int(schema.get("minItems", 0))
        hi = max(lo, int(schema.get("maxItems", lo + 2)))
        item = schema.get("items", {}) if depth < 6 else {"type": "string"}
        return [random_arguments(item, rng, words, depth + 1) for _ in range(rng.randint(lo, hi))]
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        return rng.randint(low, int(schema.get("maximum", low + 100)))
    if kind == "number":
        bottom = float(schema.get("minimum", 0.0))
        return round(rng.uniform(bottom, float(schema.get("maximum", bottom + 100.0))), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    text = _random_string(rng, words)
    shortest, longest = int(schema.get("minLength", 0)), schema.get("maxLength")
    text = text.ljust(shortest, "x")
    return text if longest is None else text[: int(longest)]


class RandomToolAgent(_Baseline):
    """One random tool call a step (a random tool, random valid arguments); after 1 to
    :data:`MAX_RANDOM_CALLS` calls since the last user message it replies instead."""

    kind = "random-tool"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        rng = _rng(request)
        messages = request.messages or ()
        since = 0
        for m in reversed(messages):
            if m.role == "user":
                break
            since += bool(m.role == "assistant" and m.tool_calls)
        tools: Sequence[ToolSpec] = request.tools or ()
        if not tools or since >= MAX_RANDOM_CALLS or (since and rng.random() < 1 / 3):
            return ModelResponse(text=DO_NOTHING_REPLY, input_tokens=0, output_tokens=0)
        tool = rng.choice(list(tools))
        args = random_arguments(tool.parameters, rng, _words(messages))
        if not isinstance(args, dict):
            args = {}
        call = ToolCall(id=f"random-{len(messages)}", name=tool.name, arguments=args)
        return ModelResponse(
            text="", tool_calls=(call,), input_tokens=0, output_tokens=0, finish_reason="tool_calls"
        )


class OracleAgent(_Baseline):
    """Answers each step with the environment's ``oracle``; only meaningful per episode
    (:meth:`for_episode`)."""

    kind = "oracle"

    def __init__(self, environment: Environment | None = None) -> None:
        self._env = environment

    def for_episode(self, environment: Environment) -> ModelProvider:
        return OracleAgent(environment)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        if self._env is None:
            raise NotSupportedError(
                "baseline:oracle plays only an agent's task (a task of kind 'episode'): "
                "it answers from the task's environment, and this request has none.",
                hint="Run it on an episode task: calipers run -m baseline:oracle -t TASK.",
            )
        answer = self._env.oracle(tuple(request.messages or ()))
        if answer is None:
            raise NotSupportedError(
                f"baseline:oracle: the environment {type(self._env).__name__} of this task "
                "has no oracle (its oracle() returned None), so no perfect agent can be played.",
                hint="Give the task's environment an oracle, or leave baseline:oracle out.",
            )
        return answer.model_copy(update={"cached": False})


BASELINES: dict[str, type[_Baseline]] = {
    c.kind: c for c in (DoNothingAgent, RandomToolAgent, OracleAgent)
}


def baseline_from_spec(rest: str, options: ModelOptions) -> ModelProvider:
    cls = BASELINES.get(rest.strip())
    if cls is None:
        raise ConfigError(
            f"Unknown baseline agent {rest!r}.",
            hint="Use baseline:do-nothing, baseline:random-tool or baseline:oracle.",
        )
    return cls()

"""What goes to a model and what comes back."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from calipers._util.hashing import json_hash

__all__ = [
    "ChatMessage",
    "GenerateParams",
    "LoglikelihoodRequest",
    "LoglikelihoodResult",
    "ModelIdentity",
    "ModelRequest",
    "ModelResponse",
    "TokenStatsRequest",
    "TokenStatsResult",
    "ToolCall",
    "ToolSpec",
]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _omit_empty(
    fields: tuple[str, ...],
) -> Any:
    """A wrap serializer that leaves ``fields`` out while they are empty (None or ``()``), so a
    value serializes as it did before the fields existed: cache keys and stored prompts of
    plain chat messages and requests do not change because tool calling was added."""

    def serialize(
        self: BaseModel, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for name in fields:
            if getattr(self, name) in (None, ()):
                data.pop(name, None)
        return data

    return model_serializer(mode="wrap")(serialize)


class ToolSpec(_Frozen):
    """A tool a model may call: its name, what it does, and its arguments as a JSON schema
    (an ``object`` schema, as the OpenAI tools protocol takes it)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(_Frozen):
    """One call a model asked for. ``arguments`` is the parsed JSON object; when the model's
    arguments were not a JSON object, ``arguments`` is None, ``raw`` holds what it wrote and
    ``error`` says what is wrong (the agent loop answers the model with that error)."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    raw: str | None = None
    error: str | None = None

    _ser = _omit_empty(("raw", "error"))


class ChatMessage(_Frozen):
    """A chat message. An assistant message may carry ``tool_calls``; a ``tool`` message is
    the result of the call ``tool_call_id`` (``name`` is the tool's)."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    _ser = _omit_empty(("tool_calls", "tool_call_id", "name"))


class GenerateParams(_Frozen):
    """Decoding parameters. Defaults are greedy, so a run is reproducible."""

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = 0
    logprobs: bool | None = None  # ask for each generated token's log-probability (openai)

    _ser = _omit_empty(("logprobs",))


class ModelRequest(_Frozen):
    """A generation request: chat ``messages`` or a plain completion ``prompt`` (exactly one)."""

    messages: tuple[ChatMessage, ...] | None = None
    prompt: str | None = None
    params: GenerateParams = Field(default_factory=GenerateParams)
    tools: tuple[ToolSpec, ...] | None = None  # tools the model may call (chat only)

    _ser = _omit_empty(("tools",))

    def model_post_init(self, __context: Any) -> None:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("ModelRequest needs exactly one of messages or prompt")
        if self.tools is not None and self.messages is None:
            raise ValueError("ModelRequest: tools need chat messages, not a plain prompt")

    @property
    def is_chat(self) -> bool:
        return self.messages is not None


class ModelResponse(_Frozen):
    """A generation result. ``latency_s`` is wall time of the call; tokens as counted by the
    backend. ``cached`` marks a response served from the response cache."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    cached: bool = False
    tool_calls: tuple[ToolCall, ...] = ()  # calls the model asked for (a request with tools)
    token_logprobs: tuple[float, ...] = ()  # per generated token, when asked and given

    _ser = _omit_empty(("tool_calls", "token_logprobs"))


class LoglikelihoodRequest(_Frozen):
    """Score each continuation given one shared context: log P(continuation | context).

    With ``contexts`` (one per continuation), continuation ``i`` is scored after
    ``context + contexts[i]`` instead: per-option contexts, as in WinoGrande's "partial
    evaluation" (each option fills the blank in the context; the same rest of the sentence is
    scored after each). Providers never see such a request: ``ModelProvider.score_continuations``
    sends one plain request per option and merges the results. ``contexts`` is left out of the
    serialized request when unset, so the cache keys and stored prompts of plain requests are
    those they had before the field existed.
    """

    context: str
    continuations: tuple[str, ...]
    contexts: tuple[str, ...] | None = None

    def model_post_init(self, __context: Any) -> None:
        if self.contexts is not None and len(self.contexts) != len(self.continuations):
            raise ValueError(
                f"LoglikelihoodRequest has {len(self.contexts)} per-option contexts for "
                f"{len(self.continuations)} continuations; it needs one per continuation"
            )

    @model_serializer(mode="wrap")
    def _omit_unset_contexts(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.contexts is None:
            data.pop("contexts", None)
        return data

    def per_option(self) -> tuple[LoglikelihoodRequest, ...]:
        """One plain request per continuation: ``(context + contexts[i], (continuations[i],))``;
        the request itself when it has no per-option contexts."""
        if self.contexts is None:
            return (self,)
        return tuple(
            LoglikelihoodRequest(context=self.context + piece, continuations=(cont,))
            for piece, cont in zip(self.contexts, self.continuations, strict=True)
        )


class LoglikelihoodResult(_Frozen):
    """Per continuation: summed log-probability, whether greedy decoding would produce it, and
    its token count. ``tokens_evaluated`` is what the backend actually computed (context once
    plus each continuation, when the backend reuses the shared prefix)."""

    logprobs: tuple[float, ...]
    is_greedy: tuple[bool, ...]
    n_tokens: tuple[int, ...]
    tokens_evaluated: int | None = None
    input_tokens: int | None = None
    latency_s: float | None = None
    cached: bool = False


class TokenStatsRequest(_Frozen):
    """Per-token statistics of ``text``: what memorisation probes such as Min-K%++ read."""

    text: str


class TokenStatsResult(_Frozen):
    """For every token ``x_t`` of the text, each conditioned on the tokens before it (and on the
    model's start token, BOS, so the first one is scored too):

    - ``logprobs[t] = log p(x_t | x_<t)``;
    - ``mean_logprob[t] = E_{z ~ p(.|x_<t)} log p(z | x_<t)``, over the whole vocabulary (minus
      the entropy of the next-token distribution);
    - ``std_logprob[t] = sqrt(Var_{z ~ p(.|x_<t)} log p(z | x_<t))``.

    ``tokens`` are the token texts as the backend splits them (bytes that are not whole UTF-8
    characters show as U+FFFD). Min-K%++ (Zhang et al. 2024) scores token t as
    ``(logprobs[t] - mean_logprob[t]) / std_logprob[t]``.
    """

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...]
    mean_logprob: tuple[float, ...]
    std_logprob: tuple[float, ...]
    tokens_evaluated: int | None = None
    latency_s: float | None = None

    def model_post_init(self, __context: Any) -> None:
        n = len(self.tokens)
        if not len(self.logprobs) == len(self.mean_logprob) == len(self.std_logprob) == n:
            raise ValueError("TokenStatsResult needs one logprob, mean and std per token")


class ModelIdentity(_Frozen):
    """Who answered: enough to tell two models (or two files of one model) apart."""

    provider: str
    name: str
    sha256: str | None = None  # GGUF file hash for local models
    api_model: str | None = None  # model id reported by an API
    base_url: str | None = None
    quantization: str | None = None
    chat_template_hash: str | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    def key(self) -> str:
        """Stable key for caching: changes when any identifying field changes."""
        return json_hash(self.model_dump(mode="json"), length=32)

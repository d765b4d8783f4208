"""The model provider protocol."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from calipers.errors import NotSupportedError
from calipers.types import (
    ChatMessage,
    Environment,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelIdentity,
    ModelRequest,
    ModelResponse,
    TokenStatsRequest,
    TokenStatsResult,
)

__all__ = ["FleetEndpoint", "ModelOptions", "ModelProvider", "common_prefix", "merge_results"]


class FleetEndpoint(BaseModel):
    """One server of a fleet (``docs/fleet.md``): its URL, the *name* of the variable holding
    its key (None: the run's ``api_key_env``) and the most requests it may have in flight
    (None: ``concurrency``, else 8)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(min_length=1)
    api_key_env: str | None = None
    max_concurrency: int | None = Field(None, ge=1)


class ModelOptions(BaseModel):
    """Options a user can set for any provider; each provider reads what applies to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = Field(None, description="OpenAI-compatible server, e.g. .../v1")
    # how requests are made, not what is measured: a resumed run may use another fleet
    fleet: tuple[FleetEndpoint, ...] = Field(
        (), description="Servers of one model, requests spread over them (openai; docs/fleet.md)"
    )
    api_key_env: str = Field(  # the *name* of the variable; the key is never stored
        "OPENAI_API_KEY", description="Environment variable holding the API key"
    )
    concurrency: int | None = None
    timeout_s: float = Field(  # per attempt of one request, all of it
        120.0, gt=0, description="Longest one attempt of one request may take (openai)"
    )
    max_retries: int = Field(  # attempts after the first (429, 5xx, timeouts)
        4, ge=0, description="Retries of a request after 429, 5xx or a timeout (openai)"
    )
    n_ctx: int = Field(4096, description="Context size for llamacpp")
    n_threads: int | None = Field(  # llamacpp: threads generating tokens (and prompts, unless
        None, description="llama.cpp threads (see docs/models.md)"
    )
    n_threads_batch: int | None = None  # ... this is set); None: see calipers.models._threads

    @model_validator(mode="after")
    def _one_way_to_the_server(self) -> ModelOptions:
        if self.base_url is not None and self.fleet:
            raise ValueError(
                "give one server (base_url) or a fleet, not both: list every server in the "
                "fleet (--base-url repeated, or --fleet FILE)"
            )
        return self


class ModelProvider(ABC):
    """A model that calipers can evaluate.

    ``generate`` handles chat (``request.messages``) and plain completion (``request.prompt``).
    ``loglikelihood`` scores continuations of one context; backends that cannot do it keep the
    default, which raises :class:`NotSupportedError`. So does ``token_stats`` (per-token
    log-probabilities with the mean and spread of the next-token distribution, for memorisation
    probes), which needs the full vocabulary distribution at every position. Providers load
    lazily: constructing one is cheap, the first call loads weights or opens connections, so a
    fully cached re-run never loads the model at all.
    """

    provider_name: str = "abstract"
    supports_loglikelihood: bool = False
    supports_token_stats: bool = False
    default_concurrency: int = 1

    @abstractmethod
    def identity(self) -> ModelIdentity:
        """Who answers; computed once (it may hash a weights file)."""

    @abstractmethod
    async def generate(self, request: ModelRequest) -> ModelResponse: ...

    async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        raise NotSupportedError(
            f"The {self.provider_name} provider cannot compute log-likelihoods.",
            hint="Use a generation formulation of the task, or a llamacpp model.",
        )

    def loglikelihood_refusal(self) -> str | None:
        """Why a run about to be planned cannot score log-likelihoods with this provider (a
        clause: "the fake provider cannot compute log-likelihoods"), or None when it can. The
        runner asks while planning a multiple-choice task. The openai provider checks its
        server here, once (it blocks for a few requests), and names the defect it found; what
        it checked shows in ``runtime()``."""
        if self.supports_loglikelihood:
            return None
        return f"the {self.provider_name} provider cannot compute log-likelihoods"

    async def score_continuations(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
        """``loglikelihood`` for any request, the one way callers should ask. A request with
        per-option contexts (``request.contexts``) is sent as one plain request per option, one
        after the other (a backend that keeps the KV cache of the previous request, as
        llamacpp does, reuses the shared prefix), and the results are merged into one; so
        providers only ever implement the plain, shared-context form."""
        if request.contexts is None:
            return await self.loglikelihood(request)
        return merge_results([await self.loglikelihood(r) for r in request.per_option()])

    async def token_stats(self, request: TokenStatsRequest) -> TokenStatsResult:
        raise NotSupportedError(
            f"The {self.provider_name} provider cannot give per-token log-probabilities with "
            "the mean and spread of the next-token distribution (Min-K%++ needs the full "
            "vocabulary distribution at every position).",
            hint="Run log-probability probes on a llamacpp model; API models get the "
            "generation-based probes only.",
        )

    def render_chat(self, messages: Sequence[ChatMessage]) -> str:
        """The prompt text the model sees for ``messages`` (chat template applied, generation
        prompt added). Needed to score multiple choice by log-likelihood with the chat template
        on."""
        raise NotSupportedError(
            f"The {self.provider_name} provider cannot render its chat template locally.",
            hint="Run log-likelihood tasks with --no-chat-template on this provider.",
        )

    def count_tokens(self, text: str) -> int:
        """How many tokens the model reads for ``text`` (a rendered prompt: special tokens of a
        chat template count as the model counts them). Context-fill experiments need it, so a
        prompt is sized with the model's own tokenizer, never estimated."""
        raise NotSupportedError(
            f"The {self.provider_name} provider cannot count tokens with the model's own "
            "tokenizer.",
            hint="Context fill needs a llamacpp model (or the fake model for tests).",
        )

    def context_window(self) -> int | None:
        """The most tokens one request may hold, prompt and output together, as this provider
        runs the model (llamacpp: ``n_ctx``); None when unknown."""
        return None

    def tool_format(self) -> str | None:
        """How this provider turns a request's tools into what the model reads, as a versioned
        name, where the provider does that itself (llamacpp describes the tools in the system
        message and constrains the reply); None where a server does it (openai) or the
        provider has no tool calling. Recorded in an episode task's methodology and in the
        response cache's key of requests with tools, so replies under two tool prompts are
        never compared or replayed as one; requests without tools are unaffected."""
        return None

    def for_episode(self, environment: Environment) -> ModelProvider:
        """The provider that plays one episode against ``environment``: the provider itself
        for a model. A baseline agent that needs the world (``baseline:oracle`` reads the
        environment's ``oracle``) returns a per-episode provider instead; a model never sees
        the environment, only the messages and tools sent to it."""
        return self

    def concurrency_limit(self, asked: int | None) -> int:
        """How many samples the runner may have in flight: ``asked`` (``--concurrency``) or
        the provider's default. A fleet answers with its combined capacity, as ``asked``
        bounds each of its endpoints."""
        return asked or self.default_concurrency

    def runtime(self) -> dict[str, int | str]:
        """How the model is run where that changes speed but not answers (llamacpp: thread
        counts), and what ``loglikelihood_refusal`` verified (openai); recorded in the
        methodology card, not part of the identity."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources (connections, model memory)."""


def _total(values: Sequence[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def merge_results(results: Sequence[LoglikelihoodResult]) -> LoglikelihoodResult:
    """One result from the per-option results of a split request, in option order: the
    per-option values concatenated, the token counts and latencies summed (None when a part
    does not report one)."""
    latencies = [r.latency_s for r in results]
    return LoglikelihoodResult(
        logprobs=tuple(lp for r in results for lp in r.logprobs),
        is_greedy=tuple(g for r in results for g in r.is_greedy),
        n_tokens=tuple(n for r in results for n in r.n_tokens),
        tokens_evaluated=_total([r.tokens_evaluated for r in results]),
        input_tokens=_total([r.input_tokens for r in results]),
        latency_s=None
        if any(v is None for v in latencies)
        else sum(v for v in latencies if v is not None),
        cached=bool(results) and all(r.cached for r in results),
    )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n

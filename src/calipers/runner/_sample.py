"""One sample: request -> (cache | model) -> scorers -> a record. Failures become data."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from calipers.errors import ModelLoadError, NotSupportedError
from calipers.models import CallStats, ModelProvider, Retry, track_calls
from calipers.runner._cache import ResponseCache
from calipers.runner._episode import EpisodeFailed, run_episode
from calipers.runner._plan import PlannedSample
from calipers.scorers import Scorer
from calipers.store import SampleRecord
from calipers.types import (
    LoglikelihoodRequest,
    ModelRequest,
    ModelResponse,
    Sample,
    SampleOutput,
    Score,
    Transcript,
)

__all__ = ["metric_names", "record_base", "run_sample"]


async def _call(
    provider: ModelProvider,
    request: ModelRequest | LoglikelihoodRequest,
    cache: ResponseCache | None,
) -> SampleOutput:
    if cache is not None and (hit := cache.get(request)) is not None:
        return hit
    if isinstance(request, ModelRequest):
        out = SampleOutput(response=await provider.generate(request))
    else:
        # per-option contexts (WinoGrande's partial evaluation) are split in one place
        out = SampleOutput(loglikelihood=await provider.score_continuations(request))
    if cache is not None:
        cache.put(request, out)
    return out


def metric_names(scorers: tuple[Scorer, ...]) -> list[str]:
    """The task's metric names, primary first; a metric name two scorers share is prefixed
    with the scorer's name."""
    counts: dict[str, int] = {}
    for s in scorers:
        for m in s.metrics:
            counts[m] = counts.get(m, 0) + 1
    return [f"{s.spec.name}.{m}" if counts[m] > 1 else m for s in scorers for m in s.metrics]


def _metric_values(scores: list[tuple[Scorer, dict[str, float]]]) -> dict[str, float]:
    names = iter(metric_names(tuple(s for s, _v in scores)))
    merged: dict[str, float] = {}
    for s, vals in scores:
        for m in s.metrics:
            merged[next(names)] = float(vals.get(m, float("nan")))
    return merged


def _details(results: list[tuple[Scorer, Score]], out: SampleOutput) -> dict[str, Any]:
    """What scorers explained, and the raw log-likelihoods, for the stored record."""
    details: dict[str, Any] = {
        s.spec.name: {
            k: v
            for k, v in (
                ("explanation", sc.explanation),
                ("metadata", sc.metadata),
                ("tampering", list(sc.tampering)),
            )
            if v
        }
        for s, sc in results
    }
    if out.loglikelihood is not None:
        details["loglikelihood"] = out.loglikelihood.model_dump(
            mode="json", include={"logprobs", "is_greedy", "n_tokens", "tokens_evaluated"}
        )
    return details


def _calls(stats: CallStats) -> dict[str, Any] | None:
    """``score_details["calls"]`` of a sample whose requests were retried (else nothing):
    attempts, retries, rate-limited retries and the seconds spent waiting between attempts,
    which the sample's latency (the successful attempt's) leaves out."""
    return {"calls": stats.as_dict()} if stats.retries else None


def record_base(run_id: str, planned: PlannedSample) -> dict[str, Any]:
    """The fields of a sample's record that do not depend on its outcome (what an error row
    keeps: the prompt as sent, the target, where the item came from)."""
    s = planned.sample
    prompt = planned.request.model_dump(mode="json", exclude_none=True)
    if planned.prompt_text is not None:
        prompt["rendered"] = planned.prompt_text
    return dict(
        run_id=run_id,
        task=planned.task,
        sample_id=s.id,
        epoch=planned.epoch,
        seed=planned.seed,
        position=planned.position,
        category=s.category,
        cluster=s.cluster,
        prompt=prompt,
        target=s.target_text or None,
    )


async def run_sample(
    run_id: str,
    planned: PlannedSample,
    provider: ModelProvider,
    scorers: tuple[Scorer, ...],
    cache: ResponseCache | None,
    on_retry: Callable[[Retry], None] | None = None,
) -> SampleRecord:
    """Never raises for a model or scorer failure: the record carries the error instead.
    ``on_retry`` hears of each retry of the sample's model calls."""
    s = planned.sample
    base = record_base(run_id, planned)
    start = time.perf_counter()
    if planned.environment is not None:
        return await _run_episode_sample(planned, provider, scorers, cache, on_retry, base)
    with track_calls(on_retry) as stats:
        try:
            out = await _call(provider, planned.request, cache)
        except (asyncio.CancelledError, ModelLoadError, NotSupportedError):
            raise  # the whole run cannot go on: not a property of this sample
        except Exception as e:  # a failed call is data, not a crash and not a wrong answer
            return SampleRecord(
                **base,
                latency_s=time.perf_counter() - start,
                cached=False,
                error=f"model: {type(e).__name__}: {e}",
                score_details=_calls(stats),
            )
    return await _score(s, out, scorers, _calls(stats), base)


async def _score(
    s: Sample,
    out: SampleOutput,
    scorers: tuple[Scorer, ...],
    calls: dict[str, Any] | None,
    base: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> SampleRecord:
    """Score one output and build its record (a scorer that fails makes an error record)."""
    latency: float | None
    if out.transcript is not None:
        latency, tin, tout = out.transcript.totals()
        response_text: str | None = out.transcript.final_text
        cached = all(st.cached for st in out.transcript.steps if st.kind == "model")
    elif out.response is not None:
        r = out.response
        response_text = r.text
        latency, tin, tout, cached = r.latency_s, r.input_tokens, r.output_tokens, r.cached
    else:
        ll = out.loglikelihood
        assert ll is not None
        response_text = None
        latency, tin, tout, cached = ll.latency_s, ll.input_tokens, 0, ll.cached
    try:
        results = [(sc, await sc(s, out)) for sc in scorers]
    except Exception as e:
        return SampleRecord(
            **base,
            response=response_text,
            latency_s=latency,
            input_tokens=tin,
            output_tokens=tout,
            cached=cached,
            error=f"scorer: {type(e).__name__}: {e}",
            score_details=(calls or {}) | (extra or {}) or None,
        )
    answer = next((sc.answer for _s, sc in results if sc.answer is not None), None)
    if out.loglikelihood is not None and answer is not None and answer.isdigit() and s.choices:
        response_text = s.choices[int(answer)] if int(answer) < len(s.choices) else answer
    details = _details(results, out) | (calls or {}) | (extra or {})
    if s.choices and isinstance(s.target, int):  # where the right option was shown
        details["choice"] = {"target_index": s.target, "n_options": len(s.choices)}
    if isinstance(s.metadata.get("arm"), dict):  # what a RAG arm did to this item's context
        details["rag_arm"] = s.metadata["arm"]
    return SampleRecord(
        **base,
        response=response_text,
        answer=answer,
        scores=_metric_values([(s_, sc.values) for s_, sc in results]),
        score_details=details or None,
        latency_s=latency,
        input_tokens=tin,
        output_tokens=tout,
        cached=cached,
        error=None,
    )


def _episode_details(transcript: Transcript) -> dict[str, Any]:
    """``score_details["episode"]``: every step, why the episode stopped, the final state."""
    return {
        "episode": transcript.model_dump(
            mode="json", include={"steps", "stopped", "error", "state", "replies"}
        )
    }


async def _run_episode_sample(
    planned: PlannedSample,
    provider: ModelProvider,
    scorers: tuple[Scorer, ...],
    cache: ResponseCache | None,
    on_retry: Callable[[Retry], None] | None,
    base: dict[str, Any],
) -> SampleRecord:
    """A conversation or an agent's task: the agent loop, then the scorers on its transcript.
    Each model call goes through the response cache, so a resumed run replays the steps it
    already has."""
    assert planned.environment is not None and isinstance(planned.request, ModelRequest)
    environment = planned.environment()
    player = provider.for_episode(environment)
    if player is not provider:  # answers from the world, not the request: no cache key holds
        cache = None

    async def call(request: ModelRequest) -> ModelResponse:
        out = await _call(player, request, cache)
        assert out.response is not None
        return out.response

    start = time.perf_counter()
    with track_calls(on_retry) as stats:
        try:
            transcript = await run_episode(environment, planned.request, call, planned.limits)
        except (asyncio.CancelledError, ModelLoadError, NotSupportedError):
            raise
        except EpisodeFailed as e:
            latency, tin, tout = e.transcript.totals()
            return SampleRecord(
                **base,
                response=e.transcript.final_text or None,
                latency_s=latency or time.perf_counter() - start,
                input_tokens=tin,
                output_tokens=tout,
                cached=False,
                error=str(e),
                score_details=(_calls(stats) or {}) | _episode_details(e.transcript),
            )
    last = ModelResponse(text=transcript.final_text)
    out = SampleOutput(response=last, transcript=transcript)
    return await _score(
        planned.sample, out, scorers, _calls(stats), base, _episode_details(transcript)
    )

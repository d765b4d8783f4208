"""Run a scorer synchronously on a text reply or a set of log-likelihoods."""

from __future__ import annotations

import asyncio

from calipers.scorers import Scorer
from calipers.types import LoglikelihoodResult, ModelResponse, Sample, SampleOutput, Score


def on_text(scorer: Scorer, sample: Sample, text: str) -> Score:
    return asyncio.run(scorer(sample, SampleOutput(response=ModelResponse(text=text))))


def on_logprobs(scorer: Scorer, sample: Sample, logprobs: tuple[float, ...]) -> Score:
    result = LoglikelihoodResult(
        logprobs=logprobs, is_greedy=(False,) * len(logprobs), n_tokens=(1,) * len(logprobs)
    )
    return asyncio.run(scorer(sample, SampleOutput(loglikelihood=result)))


def gen(target: str | int | None, choices: tuple[str, ...] | None = None) -> Sample:
    return Sample(id="s1", input="question?", target=target, choices=choices)

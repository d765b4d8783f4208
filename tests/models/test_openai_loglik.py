"""Log-likelihoods through an OpenAI-compatible server, against a real HTTP server on
127.0.0.1 (``_completions_app``) with a toy tokenizer (words are tokens) and planted
log-probabilities: ``lp(token after k tokens) = -(letters + k % 3) / 10``, the top one at
each position a one-letter word's, ``-(1 + k % 3) / 10``. The expected sums below are worked
by hand from that rule."""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterator

import pytest

from calipers.errors import ConfigError, NotSupportedError
from calipers.models import FleetEndpoint, ModelOptions, ModelProvider, resolve_model
from calipers.models._openai import OpenAIModel
from calipers.models._openai_loglik import MAX_PROMPTS
from calipers.runner import RunConfig, arun
from calipers.store import Store
from calipers.types import LoglikelihoodRequest, LoglikelihoodResult
from tests._servers import ServerThread
from tests.models._completions_app import Recorder, ToyBackend, completions_app


def serve(
    *, shifted: bool = False, lists: bool = True, echo: bool = True
) -> Generator[tuple[str, Recorder]]:
    app, seen = completions_app(ToyBackend(), shifted=shifted, lists=lists, echo=echo)
    server = ServerThread(app).start()
    try:
        yield f"{server.url}/v1", seen
    finally:
        server.stop()


@pytest.fixture
def correct() -> Iterator[tuple[str, Recorder]]:
    yield from serve()


@pytest.fixture
def shifted() -> Iterator[tuple[str, Recorder]]:
    yield from serve(shifted=True)


@pytest.fixture
def no_lists() -> Iterator[tuple[str, Recorder]]:
    yield from serve(lists=False)


@pytest.fixture
def no_echo() -> Iterator[tuple[str, Recorder]]:
    yield from serve(echo=False)


def model(url: str) -> OpenAIModel:
    return OpenAIModel("toy", ModelOptions(base_url=url, max_retries=2), backoff_base_s=0.01)


def score(m: OpenAIModel, *requests: LoglikelihoodRequest) -> list[LoglikelihoodResult]:
    async def go() -> list[LoglikelihoodResult]:
        try:
            return list(await asyncio.gather(*(m.loglikelihood(r) for r in requests)))
        finally:
            await m.aclose()

    return asyncio.run(go())


def generations(seen: Recorder) -> int:
    """Requests without echo: the probe's generation (a plain string, not a list)."""
    return sum(1 for p in seen.prompts if isinstance(p, str) and p.endswith("Italy is"))


# "a bb" + " ccc dd": tokens a | bb | ccc | dd; ccc follows 2 tokens: -(3 + 2)/10 = -0.5 (top
# -0.3: not greedy); dd follows 3: -(2 + 0)/10 = -0.2. " z" after 2 tokens: -(1 + 2)/10 = -0.3,
# the top: greedy. " ccc" after "a bb x" (3 tokens): -(3 + 0)/10 = -0.3.
QUESTION = LoglikelihoodRequest(context="a bb", continuations=(" ccc dd", " z", " ccc", ""))


def test_a_correct_server_gives_the_planted_sums(correct: tuple[str, Recorder]) -> None:
    url, _ = correct
    m = model(url)
    (r,) = score(m, QUESTION)
    assert r.logprobs == pytest.approx((-0.7, -0.3, -0.5, 0.0), abs=1e-12)
    assert r.is_greedy == (False, True, False, True)  # an empty continuation: 0.0 and greedy
    assert r.n_tokens == (2, 1, 1, 0)
    assert "echo verified" in str(m.runtime()["loglikelihood"])
    assert m.loglikelihood_refusal() is None
    # trailing context whitespace moves to the continuation: the same tokens as above
    (r,) = score(m, LoglikelihoodRequest(context="a bb ", continuations=("ccc dd",)))
    assert r.logprobs == pytest.approx((-0.7,), abs=1e-12)
    (r,) = score(m, LoglikelihoodRequest(context="a bb x", continuations=(" ccc",)))
    assert r.logprobs == pytest.approx((-0.3,), abs=1e-12)


def test_a_token_straddling_the_boundary_counts_with_the_continuation(
    correct: tuple[str, Recorder],
) -> None:
    url, _ = correct
    m = model(url)
    # "a bb c" + "cc dd" is read a | bb | ccc | dd: ccc starts in the context
    (r,) = score(m, LoglikelihoodRequest(context="a bb c", continuations=("cc dd",)))
    assert r.logprobs == pytest.approx((-0.7,), abs=1e-12) and r.n_tokens == (2,)
    assert m._loglik.straddled == 1


def test_an_empty_context_cannot_be_scored(correct: tuple[str, Recorder]) -> None:
    url, _ = correct
    with pytest.raises(Exception, match="nothing precedes"):
        score(model(url), LoglikelihoodRequest(context="", continuations=("a bb",)))


def test_verification_runs_once(correct: tuple[str, Recorder]) -> None:
    url, seen = correct
    m = model(url)
    requests = [
        LoglikelihoodRequest(context=f"q{i} is", continuations=(" a", " bb")) for i in range(6)
    ]
    score(m, *requests)  # six first calls at once
    score(m, *requests)
    assert m.loglikelihood_refusal() is None
    assert generations(seen) == 1


def test_the_options_of_a_question_go_as_one_list(correct: tuple[str, Recorder]) -> None:
    url, seen = correct
    m = model(url)
    score(m, QUESTION)
    before = len(seen.prompts)
    options = tuple(f" w{i}" for i in range(MAX_PROMPTS + 4))
    (r,) = score(m, LoglikelihoodRequest(context="a bb", continuations=options))
    sent = seen.prompts[before:]
    assert [len(p) for p in sent] == [MAX_PROMPTS, 4]  # bounded lists
    assert [p for batch in sent for p in batch] == [f"a bb{o}" for o in options]
    # " wN" after 2 tokens: -(2 + 2)/10, or -(3 + 2)/10 from w10 on
    assert r.logprobs == pytest.approx([-0.4] * 10 + [-0.5] * 10, abs=1e-12)


def test_a_server_that_rejects_lists_gets_one_prompt_per_request(
    no_lists: tuple[str, Recorder],
) -> None:
    url, seen = no_lists
    m = model(url)
    (r,) = score(m, QUESTION)
    assert r.logprobs == pytest.approx((-0.7, -0.3, -0.5, 0.0), abs=1e-12)
    assert len(seen.lists()) == 1  # the probe's list, tried once, not retried
    assert "one prompt per request" in str(m.runtime()["loglikelihood"])
    before = len(seen.prompts)
    score(m, QUESTION)
    assert seen.prompts[before:] == ["a bb ccc dd", "a bb z", "a bb ccc"]


def test_a_server_without_echo_is_read_through_prompt_logprobs(
    no_echo: tuple[str, Recorder],
) -> None:
    url, _ = no_echo
    m = model(url)
    (r,) = score(m, QUESTION)
    assert r.logprobs == pytest.approx((-0.7, -0.3, -0.5, 0.0), abs=1e-12)
    assert r.is_greedy == (False, True, False, True)
    assert "prompt_logprobs" in str(m.runtime()["loglikelihood"])


def test_a_shifted_server_is_refused_naming_the_defect(shifted: tuple[str, Recorder]) -> None:
    url, seen = shifted
    m = model(url)
    with pytest.raises(NotSupportedError) as e:
        score(m, QUESTION)
    # The probe ends "... Italy is" (11 tokens); the toy generates " z" after it, which gets
    # -(1 + 11 % 3)/10 = -0.3; the shifted echo gives " z" the value after 12 tokens,
    # -(1 + 0)/10 = -0.1, and puts -0.3 at " is".
    message = " ".join(str(e.value).split())
    assert "log-probabilities are shifted by one token" in message
    assert "generating ' z' after the probe gave it -0.3000, the echo gives it -0.1000" in message
    assert "at the position before (token 11, ' is')" in message
    assert e.value.hint is not None and "llamacpp:" in e.value.hint
    # refused once, for good: no second probe
    with pytest.raises(NotSupportedError):
        score(m, QUESTION)
    assert generations(seen) == 1
    assert "shifted by one token" in str(m.loglikelihood_refusal())
    assert str(m.runtime()["loglikelihood"]).startswith("refused: the server at")


def test_a_run_records_the_check_or_falls_back(
    correct: tuple[str, Recorder], shifted: tuple[str, Recorder]
) -> None:
    def run(url: str, **more: object) -> tuple[dict[str, int | str], str | None]:
        config = RunConfig.model_validate(
            {
                "model": "openai:toy",
                "tasks": ("dyn_dates_mc",),
                "limit": 2,
                "chat_template": False,
                "model_options": ModelOptions(base_url=url),
                **more,
            }
        )
        with Store.open() as store:
            result = asyncio.run(arun(config, store))
        card = result.methodology
        return card.model_runtime, card.tasks["dyn_dates_mc"].formulation_fallback

    runtime, fallback = run(correct[0])
    assert fallback is None and "echo verified" in str(runtime["loglikelihood"])
    runtime, fallback = run(shifted[0])
    assert fallback is not None and "shifted by one token" in fallback
    assert str(runtime["loglikelihood"]).startswith("refused:")
    with pytest.raises(ConfigError, match="shifted by one token"):
        run(shifted[0], formulation="cloze")
    # the chat template on: the server cannot render it, so the task falls back before probing
    _, fallback = run(correct[0], chat_template=True)
    assert fallback is not None and "cannot render the model's chat template" in fallback


def test_a_fleet_checks_every_server(
    correct: tuple[str, Recorder], shifted: tuple[str, Recorder]
) -> None:
    """One shifted server among correct ones would make some samples' scores wrong: the
    fleet asks each server's check, and refuses when any fails."""

    def fleet(*urls: str) -> ModelProvider:
        eps = tuple(FleetEndpoint(url=u) for u in urls)
        return resolve_model("openai:toy", ModelOptions(fleet=eps, max_retries=2))

    second = serve()
    try:
        good = fleet(correct[0], next(second)[0])
        assert good.loglikelihood_refusal() is None
        assert str(good.runtime()["loglikelihood"]).startswith("echo verified")
    finally:
        second.close()
    bad = fleet(correct[0], shifted[0])
    why = bad.loglikelihood_refusal()
    assert why is not None and shifted[0] in why and "shifted by one token" in why

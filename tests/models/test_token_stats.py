"""Per-token statistics (``token_stats``): the vocabulary arithmetic against closed forms, the
fake model's memorisation, the default of providers that cannot, and the real SmolLM2 against
its own log-likelihood path and an independent whole-sequence evaluation."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from calipers.errors import ConfigError, NotSupportedError
from calipers.models import FakeModel, ModelOptions, resolve_model
from calipers.models._fake import MEMORISED_Z
from calipers.models._llamacpp import LlamaCppModel
from calipers.models._llamacpp_tokens import next_token_stats
from calipers.models._openai import OpenAIModel
from calipers.types import (
    LoglikelihoodRequest,
    ModelRequest,
    TokenStatsRequest,
    TokenStatsResult,
)
from tests.models.conftest import N_THREADS


def stats(model: Any, text: str) -> TokenStatsResult:
    result: TokenStatsResult = asyncio.run(model.token_stats(TokenStatsRequest(text=text)))
    return result


def z_scores(r: TokenStatsResult) -> np.ndarray[Any, Any]:
    z: np.ndarray[Any, Any] = (np.array(r.logprobs) - np.array(r.mean_logprob)) / np.array(
        r.std_logprob
    )
    return z


# -- the vocabulary arithmetic -------------------------------------------------------------


def test_next_token_stats_closed_forms() -> None:
    """A next-token distribution whose log-probabilities take two values, a (mass q) and b
    (mass 1 - q), has mean q a + (1 - q) b and sd sqrt(q (1 - q)) |a - b|; a token of the
    first kind sits sqrt((1 - q) / q) sds above the mean."""
    p1 = np.array([0.5, 0.25, 0.25])  # log-probs ln .5 (mass .5) and ln .25 (mass .5)
    p2 = np.array([0.8, 0.1, 0.1])  # ln .8 (mass .8) and ln .1 (mass .2)
    logits = np.log(np.vstack([p1, p2, p1])) + np.array([[3.0], [-1.0], [0.5]])  # any shift
    out = next_token_stats(logits, [0, 1])  # the last row has no next token
    assert out.shape == (2, 3)
    mu1 = 0.5 * math.log(0.5) + 0.5 * math.log(0.25)
    mu2 = 0.8 * math.log(0.8) + 0.2 * math.log(0.1)
    sd1 = 0.5 * math.log(2.0)
    sd2 = math.sqrt(0.8 * 0.2) * math.log(8.0)
    np.testing.assert_allclose(out[0], [math.log(0.5), mu1, sd1], rtol=1e-12)
    np.testing.assert_allclose(out[1], [math.log(0.1), mu2, sd2], rtol=1e-12)
    z = (out[:, 0] - out[:, 1]) / out[:, 2]
    np.testing.assert_allclose(z, [1.0, -2.0], rtol=1e-12)  # sqrt(.5/.5), -sqrt(.8/.2)


def test_next_token_stats_in_blocks_equals_one_pass() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(9, 50)) * 3
    targets = [int(t) for t in rng.integers(0, 50, size=8)]
    np.testing.assert_allclose(
        next_token_stats(logits, targets, block=2),
        next_token_stats(logits, targets),
        rtol=1e-12,
    )


def test_result_needs_one_value_per_token() -> None:
    with pytest.raises(ValueError, match="one logprob, mean and std per token"):
        TokenStatsResult(
            tokens=("a", "b"), logprobs=(-1.0,), mean_logprob=(-1.0, -1.0), std_logprob=(1.0, 1.0)
        )


# -- providers that cannot -----------------------------------------------------------------


def test_openai_provider_does_not_offer_token_stats() -> None:
    model = OpenAIModel("any", ModelOptions(base_url="http://127.0.0.1:9/v1"))
    assert not model.supports_token_stats
    with pytest.raises(NotSupportedError, match="cannot give per-token log-probabilities"):
        stats(model, "some text")


# -- the fake model ------------------------------------------------------------------------

SECRET = "The quick brown fox jumps over the lazy dog near the riverbank at dawn."


def test_fake_token_stats_are_deterministic_and_plausible() -> None:
    model = FakeModel()
    text = "An ordinary sentence that nobody memorised, with  two spaces."
    first, second = stats(model, text), stats(FakeModel(), text)
    assert first == second.model_copy(update={"latency_s": first.latency_s})
    assert "".join(first.tokens) == text
    assert all(lp < 0 for lp in first.logprobs)
    assert all(sd > 0 for sd in first.std_logprob)
    assert np.abs(z_scores(first)).max() <= 2.5 + 1e-9
    assert model.supports_token_stats


def test_fake_memorised_words_score_high() -> None:
    model = FakeModel(memorised=[SECRET])
    alone = z_scores(stats(model, SECRET))
    assert np.all(np.abs(alone - MEMORISED_Z) <= 0.25 + 1e-9)
    text = "Preface words here. " + SECRET + " And an epilogue."
    z = z_scores(stats(model, text))
    plain = z_scores(stats(FakeModel(), text))  # the same text, nothing memorised
    secret = np.zeros(len(z), dtype=bool)
    secret[3 : 3 + len(SECRET.split())] = True
    assert np.all(z[secret] >= MEMORISED_Z - 0.25 - 1e-9)
    assert np.array_equal(z[~secret], plain[~secret])  # words around it are untouched
    assert np.abs(plain).max() <= 2.5 + 1e-9
    assert all(lp < 0 for lp in stats(model, text).logprobs)
    shuffled = " ".join(reversed(SECRET.split()))
    assert np.abs(z_scores(stats(model, shuffled))).max() <= 2.5 + 1e-9
    assert model.identity().extra["memorised"].startswith("1:")


def gen(model: Any, request: ModelRequest) -> str:
    return str(asyncio.run(model.generate(request)).text)


def test_fake_recalls_the_rest_of_a_memorised_text() -> None:
    model = FakeModel(memorised=[SECRET])
    first = "The quick brown fox jumps over"
    assert gen(model, ModelRequest(prompt=first)) == SECRET[len(first) :]
    assert gen(model, ModelRequest(prompt="Continue:\n\n" + first)) == SECRET[len(first) :]
    assert gen(model, ModelRequest(prompt="The quick")) == "The quick"  # too short a cue: echo
    assert gen(model, ModelRequest(prompt="quick The brown fox jumps over")) == (
        "quick The brown fox jumps over"
    )  # not the text's beginning: echo


def test_fake_fills_a_masked_option() -> None:
    item = "Which is a colour?\nA. seven\nB. purple\nC. table\nD. run"
    model = FakeModel(memorised=[item])
    prompt = (
        "Fill in the [MASK] in option C.\n\n"
        "Which is a colour?\nA. seven\nB. purple\nC. [MASK]\nD. run\n\nReply."
    )
    assert gen(model, ModelRequest(prompt=prompt)) == "table"
    inline = "Which is a colour?\nA. seven\nB. purple\nC. ta[MASK]le\nD. run"
    assert gen(model, ModelRequest(prompt=inline)) == "b"  # cut at the text after the mask
    other = prompt.replace("Which is a colour?", "colour? is Which a")
    assert gen(model, ModelRequest(prompt=other)) == other  # question changed: no recall


def test_fake_memorise_spec_option(tmp_path: Path) -> None:
    as_json = tmp_path / "m.json"
    as_json.write_text(json.dumps([SECRET]))
    as_jsonl = tmp_path / "m.jsonl"
    as_jsonl.write_text(json.dumps({"text": SECRET}) + "\n\n" + json.dumps("another one") + "\n")
    a = resolve_model(f"fake:echo,memorise={as_json}")
    b = resolve_model(f"fake:echo,memorise={as_jsonl}")
    assert z_scores(stats(a, SECRET)).min() >= MEMORISED_Z - 0.25
    assert z_scores(stats(b, SECRET)).min() >= MEMORISED_Z - 0.25
    assert b.identity().extra["memorised"].startswith("2:")
    assert resolve_model("fake:echo").identity().extra == {}


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "does not exist"), ("[1, 2]", "expected strings"), ("{bad", "not valid JSON")],
)
def test_bad_memorise_file(tmp_path: Path, content: str | None, message: str) -> None:
    path = tmp_path / "m.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=message):
        resolve_model(f"fake:echo,memorise={path}")


# -- the real model ------------------------------------------------------------------------


@pytest.mark.slow
def test_llamacpp_token_stats_agree_with_loglikelihood_and_direct_logits(
    smollm2_path: Path, reference_llama: Any
) -> None:
    model = LlamaCppModel(smollm2_path, ModelOptions(n_ctx=512, n_threads=N_THREADS))
    try:
        context, continuation = "The capital of France is", " Paris, a city on the Seine."
        text = context + continuation
        result = stats(model, text)
        llama = model._llama
        toks = list(llama.tokenize(text.encode(), add_bos=False, special=True))
        ctx_toks = list(llama.tokenize(context.encode(), add_bos=False, special=True))
        assert toks[: len(ctx_toks)] == ctx_toks  # the context's tokens start the text's
        n_ctx_toks = len(ctx_toks)
        assert len(result.tokens) == len(toks) and "".join(result.tokens) == text

        def loglik(ctx: str, cont: str) -> float:
            request = LoglikelihoodRequest(context=ctx, continuations=(cont,))
            return float(asyncio.run(model.loglikelihood(request)).logprobs[0])

        assert sum(result.logprobs) == pytest.approx(loglik("", text), abs=1e-4)
        bos = llama._model.token_get_text(llama.token_bos())  # the text the scoring starts after
        cont_sum = sum(result.logprobs[n_ctx_toks:])
        assert cont_sum == pytest.approx(loglik(bos + context, continuation), abs=1e-4)
        assert all(m <= 0 for m in result.mean_logprob)
        assert all(s >= 0 for s in result.std_logprob)
        assert all(lp <= 0 for lp in result.logprobs)

        # Independently: one whole-sequence evaluation with logits_all, numpy in float64.
        seq = [llama.token_bos(), *toks]
        reference_llama.reset()
        reference_llama.eval(seq)
        logits = np.asarray(reference_llama.scores[: len(seq) - 1], dtype=np.float64)
        lsm = logits - logits.max(axis=1, keepdims=True)
        lsm -= np.log(np.exp(lsm).sum(axis=1, keepdims=True))
        p = np.exp(lsm)
        mu = (p * lsm).sum(axis=1)
        sd = np.sqrt((p * lsm**2).sum(axis=1) - mu**2)
        np.testing.assert_allclose(result.logprobs, lsm[np.arange(len(toks)), toks], atol=1e-4)
        np.testing.assert_allclose(result.mean_logprob, mu, atol=1e-4)
        np.testing.assert_allclose(result.std_logprob, sd, atol=1e-4)
    finally:
        asyncio.run(model.aclose())

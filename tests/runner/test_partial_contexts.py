"""Per-option contexts (``LoglikelihoodRequest.contexts``): split into one plain request per
option before any provider sees them, merged back into one result; plain requests keep the
cache keys and prompt hashes they had before the field existed."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from calipers.models import FakeModel, ModelOptions
from calipers.models._fake import default_loglik
from calipers.runner import RunConfig, arun
from calipers.runner._cache import cache_key
from calipers.runner._methodology import prompt_hash
from calipers.store import Store
from calipers.tasks import PromptTemplate
from calipers.tasks.benchmarks import commonsense, winogrande
from calipers.types import LoglikelihoodRequest, LoglikelihoodResult, ModelRequest
from tests._data import DATA, needs_data

needs_winogrande = needs_data("winogrande")


def _raw_winogrande() -> list[tuple[dict[str, Any], int]]:
    rows = [json.loads(x) for x in (DATA / "winogrande/dev.jsonl").read_text().splitlines()]
    labels = (DATA / "winogrande/dev-labels.lst").read_text().split()
    return [(r, int(label) - 1) for r, label in zip(rows, labels, strict=True)]


# ---- hashes of requests without the field: computed with the code before the field existed ----


def test_plain_requests_keep_their_cache_keys() -> None:
    plain = LoglikelihoodRequest(
        context="Question: What is 2+2?\nAnswer:", continuations=(" 4", " 5")
    )
    assert cache_key("m" * 32, plain) == (
        "d63b689bb61a3c70834afb3df780ec14ef15177adcacc7841a30ca48713c6df3"
    )
    assert cache_key("m" * 32, ModelRequest(prompt="hi")) == (
        "d5e7e1f848a5f1c0c5fad67cf3b4122f65c03d3e495b47bc5a32adea338d3368"
    )
    assert plain.model_dump(mode="json") == {
        "context": "Question: What is 2+2?\nAnswer:",
        "continuations": [" 4", " 5"],
    }
    split = plain.model_copy(update={"contexts": ("", "")})
    assert cache_key("m" * 32, split) != cache_key("m" * 32, plain)


def test_prompt_cards_without_option_context_keep_their_hashes() -> None:
    assert prompt_hash(PromptTemplate().card()) == "0d981d25060287e0"
    assert prompt_hash(commonsense.arc_easy_task().prompt.card()) == "befb2cc3e4dbe013"
    full = winogrande.winogrande_task("full").prompt.card()
    assert prompt_hash(full) == "a255121e3d2aefb7"  # version 1's template, unchanged
    assert "option_context" not in full
    partial = winogrande.winogrande_task("partial").prompt.card()
    assert partial["option_context"] == "{choice}" and prompt_hash(partial) != "a255121e3d2aefb7"


def test_contexts_need_one_per_continuation() -> None:
    with pytest.raises(ValidationError, match="2 per-option contexts for 1 continuations"):
        LoglikelihoodRequest(context="a", continuations=(" b",), contexts=("x", "y"))


# ---- split and merge ------------------------------------------------------------------------

REQ = LoglikelihoodRequest(
    context="The trophy did not fit in the suitcase because the ",
    continuations=(" was too big.", " was too big."),
    contexts=("trophy", "suitcase"),
)


def test_split_and_merge_equals_one_call_per_option() -> None:
    model = FakeModel()
    merged = asyncio.run(model.score_continuations(REQ))
    assert model.calls == 2  # one plain request per option, no request with contexts
    parts = [
        asyncio.run(
            model.loglikelihood(
                LoglikelihoodRequest(context=REQ.context + piece, continuations=(" was too big.",))
            )
        )
        for piece in ("trophy", "suitcase")
    ]
    assert merged.logprobs == (parts[0].logprobs[0], parts[1].logprobs[0])
    # the fake's formula applied by hand: each continuation after its own full context
    ctx1 = "The trophy did not fit in the suitcase because the trophy"
    ctx2 = "The trophy did not fit in the suitcase because the suitcase"
    assert merged.logprobs == (
        default_loglik(ctx1, " was too big."),
        default_loglik(ctx2, " was too big."),
    )
    assert merged.n_tokens == (3, 3)  # "was too big." is three words for the fake
    assert merged.tokens_evaluated == (11 + 3) + (11 + 3)  # 11 context words each
    assert merged.input_tokens == 11 + 11
    assert merged.is_greedy == (True, True)  # alone in its request, each is the best
    assert merged.latency_s is not None and merged.latency_s >= 0 and not merged.cached


def test_plain_request_goes_through_unchanged() -> None:
    plain = LoglikelihoodRequest(context="2 + 2 =", continuations=(" 4", " five"))
    model = FakeModel()
    assert asyncio.run(model.score_continuations(plain)).logprobs == (
        default_loglik("2 + 2 =", " 4"),
        default_loglik("2 + 2 =", " five"),
    )
    assert model.calls == 1


def test_merge_reports_unknown_counts_as_unknown() -> None:
    class NoCounts(FakeModel):
        async def loglikelihood(self, request: LoglikelihoodRequest) -> LoglikelihoodResult:
            out = await super().loglikelihood(request)
            return out.model_copy(update={"tokens_evaluated": None, "latency_s": None})

    merged = asyncio.run(NoCounts().score_continuations(REQ))
    assert merged.tokens_evaluated is None and merged.latency_s is None
    assert merged.input_tokens == 22


# ---- through the runner ---------------------------------------------------------------------


class Recorder:
    """A fake log-likelihood: shorter full contexts are likelier; records what it was asked."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, context: str, continuation: str) -> float:
        self.seen.append((context, continuation))
        return -float(len(context))


def _run(config: RunConfig, model: FakeModel) -> tuple[Any, list[Any]]:
    with Store.open() as store:
        result = asyncio.run(arun(config, store, provider=model))
        return result, store.get_samples(result.run_id)


@needs_winogrande
@pytest.mark.parametrize("chat", [False, True])
def test_winogrande_run_scores_the_shared_continuation(chat: bool) -> None:
    recorder = Recorder()
    n = 40
    config = RunConfig(
        model="fake:short", tasks=("winogrande",), data_dir=str(DATA), limit=n, chat_template=chat
    )
    model = FakeModel(name="short", loglik=recorder)
    result, samples = _run(config, model)
    raw = _raw_winogrande()[:n]
    # what the model saw, built here from the raw file (lm-eval's construction)
    expected_calls = []
    for r, _t in raw:
        i = r["sentence"].index("_")
        head = r["sentence"][:i]
        prefix = f"<|user|>\n{head}\n<|assistant|>\n" if chat else head
        cont = " " + r["sentence"][i + 1 :].strip()
        expected_calls += [(prefix + r["option1"], cont), (prefix + r["option2"], cont)]
    assert sorted(recorder.seen) == sorted(expected_calls)
    # the shorter option wins (ties: the first); accuracy from the raw labels
    preds = [0 if len(r["option1"]) <= len(r["option2"]) else 1 for r, _t in raw]
    correct = [float(p == t) for p, (_r, t) in zip(preds, raw, strict=True)]
    acc = result.summary.tasks["winogrande"].metrics
    assert set(acc) == {"acc"}  # no acc_norm: it would repeat acc
    assert acc["acc"].n == n and acc["acc"].value == pytest.approx(sum(correct) / n)
    for s, p, (r, _t) in zip(samples, preds, raw, strict=True):
        assert s.answer == str(p) and s.response == (r["option1"], r["option2"])[p]
        assert s.prompt["contexts"] == [r["option1"], r["option2"]]
        lps = s.score_details["loglikelihood"]["logprobs"]
        assert lps == [-float(len(c)) for c, _ in expected_calls[2 * s.position :][:2]]


@needs_winogrande
def test_rerun_is_served_from_the_cache() -> None:
    recorder = Recorder()
    config = RunConfig(model="fake:short", tasks=("winogrande",), data_dir=str(DATA), limit=6)
    first, s1 = _run(config, FakeModel(name="short", loglik=recorder))
    again = FakeModel(name="short", loglik=recorder)
    second, s2 = _run(config, again)
    assert again.calls == 0 and all(s.cached for s in s2)
    assert [s.scores for s in s1] == [s.scores for s in s2]
    metrics = [r.summary.tasks["winogrande"].metrics for r in (first, second)]
    assert metrics[0] == metrics[1]


@needs_winogrande
def test_formulations_are_told_apart_in_the_methodology() -> None:
    recorder = Recorder()
    cards = {}
    for form in ("partial", "full"):
        config = RunConfig(
            model="fake:short", tasks=("winogrande",), data_dir=str(DATA), limit=4, formulation=form
        )
        result, samples = _run(config, FakeModel(name="short", loglik=recorder))
        cards[form] = result.methodology.tasks["winogrande"]
        assert ("contexts" in samples[0].prompt) == (form == "partial")
    assert cards["partial"].version == cards["full"].version == "2"
    assert cards["partial"].formulation == "partial" and cards["full"].formulation == "full"
    assert cards["partial"].prompt_hash != cards["full"].prompt_hash
    assert [s["name"] for s in cards["partial"].scorers] == ["loglikelihood_partial"]
    assert [s["name"] for s in cards["full"].scorers] == ["loglikelihood_mc"]


# ---- the real model -------------------------------------------------------------------------


@pytest.mark.slow
@needs_winogrande
def test_llamacpp_split_matches_direct_full_sequence_logits() -> None:
    """Three real items on SmolLM2: the merged result equals, per option, a fresh evaluation
    of the whole sequence by a separate Llama (tests.models.conftest.direct_logprob), and the
    second option reuses the shared prefix from the KV cache."""
    pytest.importorskip("llama_cpp")
    from llama_cpp import Llama

    from calipers.errors import ModelLoadError
    from calipers.models._gguf import bundled_smollm2
    from calipers.models._llamacpp import LlamaCppModel
    from tests.models.conftest import direct_logprob

    try:
        path = bundled_smollm2()
    except ModelLoadError as e:
        pytest.skip(str(e))
    model = LlamaCppModel(path, ModelOptions(n_ctx=512, n_threads=2))
    ref = Llama(model_path=str(path), n_ctx=512, n_threads=2, logits_all=True, verbose=False)
    try:
        for r, _t in _raw_winogrande()[:3]:
            i = r["sentence"].index("_")
            head, cont = r["sentence"][:i], " " + r["sentence"][i + 1 :].strip()
            options = (r["option1"], r["option2"])
            req = LoglikelihoodRequest(context=head, continuations=(cont, cont), contexts=options)
            merged = asyncio.run(model.score_continuations(req))
            for lp, opt in zip(merged.logprobs, options, strict=True):
                assert lp == pytest.approx(direct_logprob(ref, head + opt, cont)[0], abs=1e-3)
            # without reuse each option evaluates all its tokens (tokens_evaluated equals
            # input_tokens); the second option reuses the sentence head from the KV cache
            assert merged.tokens_evaluated is not None and merged.input_tokens is not None
            assert merged.tokens_evaluated < merged.input_tokens
    finally:
        ref.close()
        asyncio.run(model.aclose())

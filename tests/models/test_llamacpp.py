"""The llamacpp provider against the real bundled SmolLM2-135M-Instruct (Q4_1)."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError, ModelCallError, ModelLoadError
from calipers.models import ModelOptions, resolve_model
from calipers.models._gguf import ChatTemplate, GgufInfo, quantization_name, read_metadata
from calipers.models._llamacpp import LlamaCppModel, llamacpp_from_spec
from calipers.types import (
    ChatMessage,
    GenerateParams,
    LoglikelihoodRequest,
    LoglikelihoodResult,
    ModelRequest,
    ModelResponse,
)
from tests.models.conftest import N_THREADS, direct_logprob

OPTIONS = ModelOptions(n_ctx=1024, n_threads=N_THREADS)


@pytest.fixture(scope="module")
def model(smollm2_path: Path) -> Iterator[LlamaCppModel]:
    m = LlamaCppModel(smollm2_path, OPTIONS)
    yield m
    asyncio.run(m.aclose())


def loglik(model: LlamaCppModel, context: str, *conts: str) -> LoglikelihoodResult:
    return asyncio.run(
        model.loglikelihood(LoglikelihoodRequest(context=context, continuations=conts))
    )


def gen(model: LlamaCppModel, request: ModelRequest) -> ModelResponse:
    return asyncio.run(model.generate(request))


def loaded(model: LlamaCppModel) -> Any:
    """The provider's Llama instance, loading it if no test did yet."""
    with model._lock:
        return model._ensure_loaded()


def chat(text: str, **params: Any) -> ModelRequest:
    return ModelRequest(
        messages=(ChatMessage(role="user", content=text),), params=GenerateParams(**params)
    )


FEW_SHOT = (
    "Question: What is the capital of Italy?\nAnswer: Rome\n\n"
    "Question: What is the capital of France?\nAnswer:"
)
CASES: list[tuple[str, tuple[str, ...]]] = [
    (FEW_SHOT, (" Paris", " London", " Berlin", " the city of Lyon")),
    (FEW_SHOT, (" Paris", " Paris, of course")),  # same context again: KV prefix reused
    ("The quick brown fox ", ("jumps over the lazy dog", "sleeps")),  # trailing space moves
    ("", ("Hello world", "x")),  # empty context: scored after BOS
    ("Hi", (" there", "!")),  # one-token context
    ("2 + 2 =", (" 4", " 5", " four", " 22")),
    ("Café au", (" lait ☕", "")),  # non-ASCII; empty continuation scores 0
]


CASE_IDS = ["few-shot", "kv-reuse", "trailing-space", "empty-ctx", "1-token-ctx", "arith", "utf8"]


@pytest.mark.slow
@pytest.mark.parametrize(("context", "continuations"), CASES, ids=CASE_IDS)
def test_loglikelihood_equals_direct_logits(
    model: LlamaCppModel, reference_llama: Any, context: str, continuations: tuple[str, ...]
) -> None:
    result = loglik(model, context, *continuations)
    for cont, lp, greedy in zip(continuations, result.logprobs, result.is_greedy, strict=True):
        expected, expected_greedy = direct_logprob(reference_llama, context, cont)
        assert lp == pytest.approx(expected, abs=1e-3), (context, cont)
        assert greedy == expected_greedy


@pytest.mark.slow
def test_loglikelihood_after_generation_is_unchanged(
    model: LlamaCppModel, reference_llama: Any
) -> None:
    before = loglik(model, FEW_SHOT, " Paris", " Rome is")
    gen(model, ModelRequest(prompt=FEW_SHOT, params=GenerateParams(max_tokens=3)))
    after = loglik(model, FEW_SHOT, " Paris", " Rome is")
    assert after.logprobs == before.logprobs
    assert after.logprobs[1] == pytest.approx(
        direct_logprob(reference_llama, FEW_SHOT, " Rome is")[0], abs=1e-3
    )


@pytest.mark.slow
def test_context_is_evaluated_once(model: LlamaCppModel) -> None:
    options = (" Paris", " London", " Berlin", " Madrid is")
    loglik(model, "Unrelated text first.", "x")  # nothing of FEW_SHOT left in the cache
    result = loglik(model, FEW_SHOT, *options)
    assert result.input_tokens is not None
    n_ctx = result.input_tokens - sum(result.n_tokens)
    naive = sum(n_ctx + n for n in result.n_tokens)
    assert result.tokens_evaluated is not None
    assert result.tokens_evaluated == n_ctx - 1 + sum(1 + n for n in result.n_tokens)
    assert result.tokens_evaluated < naive / 2
    again = loglik(model, FEW_SHOT, *options)  # the whole shared prefix is cached now
    assert again.tokens_evaluated == sum(1 + n for n in result.n_tokens)
    assert again.logprobs == result.logprobs


@pytest.mark.slow
def test_too_long_for_the_context_window(model: LlamaCppModel) -> None:
    with pytest.raises(ModelCallError, match="exceed the model's context window of 1024"):
        loglik(model, "word " * 1100, " end")


@pytest.mark.slow
def test_greedy_generation_is_deterministic(model: LlamaCppModel) -> None:
    request = chat("Name a colour.", max_tokens=8)
    first = gen(model, request)
    gen(model, chat("Something else entirely.", max_tokens=2))
    assert [gen(model, request).text for _ in range(2)] == [first.text] * 2
    assert first.text
    assert first.input_tokens and first.input_tokens > 10  # the template's system prompt
    assert first.latency_s is not None and first.latency_s > 0


@pytest.mark.slow
def test_chat_generation_is_what_llama_cpp_chat_produces(model: LlamaCppModel) -> None:
    """Generating from render_chat() text gives llama-cpp-python's own chat completion."""
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    ours = gen(model, chat(messages[0]["content"], max_tokens=12))
    theirs = loaded(model).create_chat_completion(
        messages=messages, max_tokens=12, temperature=0.0, top_k=0, min_p=0.0,
        repeat_penalty=1.0, seed=0,
    )  # fmt: skip
    assert ours.text == theirs["choices"][0]["message"]["content"]
    assert ours.input_tokens == theirs["usage"]["prompt_tokens"]


@pytest.mark.slow
def test_max_tokens_and_stop(model: LlamaCppModel) -> None:
    prompt = "Here is a list of fruits: apple, banana,"
    full = gen(model, ModelRequest(prompt=prompt, params=GenerateParams(max_tokens=6)))
    assert full.output_tokens == 6
    assert full.finish_reason == "length"
    assert full.input_tokens == 11
    words = full.text.split()
    assert len(words) >= 2, full.text
    stop = words[1]
    stopped = gen(
        model, ModelRequest(prompt=prompt, params=GenerateParams(max_tokens=6, stop=(stop,)))
    )
    assert stopped.text == full.text[: full.text.index(stop)]
    assert stopped.finish_reason == "stop"


@pytest.mark.slow
def test_render_chat_matches_llama_cpp_formatter(model: LlamaCppModel) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llama = loaded(model)
    formatter = Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=llama._model.token_get_text(llama.token_eos()),
        bos_token=llama._model.token_get_text(llama.token_bos()),
    )
    conversations = [
        [ChatMessage(role="user", content="Hi")],
        [
            ChatMessage(role="system", content="Answer with one letter."),
            ChatMessage(role="user", content="A or B?"),
            ChatMessage(role="assistant", content="A"),
            ChatMessage(role="user", content="Sure? «ünïcode»"),
        ],
    ]
    for messages in conversations:
        dicts: list[Any] = [m.model_dump() for m in messages]
        expected = formatter(messages=dicts).prompt
        assert model.render_chat(messages) == expected
    assert model.render_chat(conversations[0]).endswith("<|im_start|>assistant\n")


def test_identity_from_header_without_loading(smollm2_path: Path) -> None:
    fresh = llamacpp_from_spec("@smollm2", ModelOptions())
    ident = fresh.identity()
    assert fresh.loads == 0 and fresh._llama is None
    assert ident.provider == "llamacpp"
    assert ident.sha256 == hashlib.sha256(smollm2_path.read_bytes()).hexdigest()
    assert ident.quantization == "Q4_1"
    assert ident.name == "Smollm2 135M 8k Lc100K Mix1 Ep2"
    template = read_metadata(smollm2_path).get_str("tokenizer.chat_template")
    assert template
    assert ident.chat_template_hash == hashlib.sha256(template.encode()).hexdigest()[:16]
    assert fresh.identity() is ident
    assert resolve_model("smollm2").identity() == ident


@pytest.mark.slow
def test_gguf_header_agrees_with_llama_cpp(model: LlamaCppModel) -> None:
    theirs = loaded(model).metadata
    info = read_metadata(model.path)
    for key, value in info.metadata.items():
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            assert theirs[key] == str(value), key
    assert info.special_tokens == {"bos": "<|im_start|>", "eos": "<|im_end|>"}


def test_quantization_from_file_name() -> None:
    assert quantization_name({}, Path("llama-3-8b.Q5_K_M.gguf")) == "Q5_K_M"
    assert quantization_name({}, Path("model-q8_0.gguf")) == "Q8_0"
    assert quantization_name({}, Path("qwen2.5-0.5b-instruct-fp16.gguf")) is None
    assert quantization_name({}, Path("phi-3-mini-4k-instruct-f16.gguf")) == "F16"
    assert quantization_name({"general.file_type": 15}, Path("x.gguf")) == "Q4_K_M"


def test_not_a_gguf_file(tmp_path: Path) -> None:
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"PK\x03\x04 this is a zip")
    with pytest.raises(ModelLoadError, match="is not a GGUF file") as err:
        resolve_model(f"llamacpp:{bad}")
    assert err.value.hint and "GGUF" in err.value.hint


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="does not exist"):
        resolve_model(f"llamacpp:{tmp_path / 'nope.gguf'}")


def test_truncated_header(tmp_path: Path) -> None:
    bad = tmp_path / "cut.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00\x00\x00")
    model = LlamaCppModel(bad)
    with pytest.raises(ModelLoadError, match="Cannot read the GGUF header"):
        model.identity()


def test_unknown_bundled_model() -> None:
    with pytest.raises(ConfigError, match="Unknown bundled model '@nope'"):
        llamacpp_from_spec("@nope", ModelOptions())


def test_missing_llama_cpp_gives_install_hint(
    smollm2_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp -> ImportError
    fresh = LlamaCppModel(smollm2_path)
    with pytest.raises(ModelLoadError, match="needs llama-cpp-python") as err:
        gen(fresh, ModelRequest(prompt="x"))
    assert err.value.hint == "pip install llama-cpp-python"


def test_chat_template_errors(smollm2_path: Path) -> None:
    rejecting = LlamaCppModel(smollm2_path)
    rejecting._template = ChatTemplate(
        "{{ raise_exception('Only user messages') }}", bos_token="", eos_token=""
    )
    with pytest.raises(ModelCallError, match="rejected the messages: Only user messages"):
        rejecting.render_chat([ChatMessage(role="system", content="x")])
    broken = LlamaCppModel(smollm2_path)
    broken._info = GgufInfo({"tokenizer.chat_template": "{% for m in messages %}"})
    with pytest.raises(ModelLoadError, match="does not compile"):
        broken.render_chat([ChatMessage(role="user", content="x")])

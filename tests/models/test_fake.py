"""The deterministic fake model and the model registry."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from calipers.errors import ConfigError, ModelCallError, UnknownNameError
from calipers.models import FakeModel, ModelOptions, ModelProvider, resolve_model
from calipers.models._fake import fake_from_spec
from calipers.types import (
    ChatMessage,
    GenerateParams,
    LoglikelihoodRequest,
    ModelRequest,
    ModelResponse,
)


def gen(model: ModelProvider, request: ModelRequest) -> ModelResponse:
    return asyncio.run(model.generate(request))


def prompt(text: str, **params: Any) -> ModelRequest:
    return ModelRequest(prompt=text, params=GenerateParams(**params))


def chat(*turns: tuple[str, str]) -> ModelRequest:
    return ModelRequest(messages=tuple(ChatMessage(role=r, content=c) for r, c in turns))


def test_echo_answers_the_prompt_or_last_user_message() -> None:
    model = resolve_model("fake:echo")
    assert isinstance(model, FakeModel)
    assert gen(model, prompt("two words")).text == "two words"
    request = chat(("system", "be brief"), ("user", "first"), ("assistant", "ok"), ("user", "last"))
    response = gen(model, request)
    assert response.text == "last"
    assert response.input_tokens == 5  # words of all messages
    assert response.output_tokens == 1
    assert response.finish_reason == "stop"
    assert response.latency_s is not None and response.latency_s >= 0
    assert model.identity().model_dump() == {
        "provider": "fake", "name": "echo", "sha256": None, "api_model": None,
        "base_url": None, "quantization": None, "chat_template_hash": None, "extra": {},
    }  # fmt: skip


def test_const_and_cycle() -> None:
    const = fake_from_spec("const=The answer is B", ModelOptions())
    assert {gen(const, prompt(q)).text for q in ("a", "b", "c")} == {"The answer is B"}
    cycle = fake_from_spec("cycle=A|B|C", ModelOptions())
    assert [gen(cycle, prompt("q")).text for _ in range(5)] == ["A", "B", "C", "A", "B"]
    assert cycle.calls == 5


def test_script(tmp_path: Path) -> None:
    script = tmp_path / "answers.json"
    script.write_text(json.dumps({"France": "Paris", "Japan": "Tokyo", "*": "unknown"}))
    model = fake_from_spec(f"script={script}", ModelOptions())
    assert gen(model, prompt("Capital of France?")).text == "Paris"
    assert gen(model, chat(("user", "Capital of Japan?"))).text == "Tokyo"
    assert gen(model, prompt("Capital of Peru?")).text == "unknown"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"x": 1}', "expected a JSON object"),
    ],
)
def test_bad_script(tmp_path: Path, content: str | None, message: str) -> None:
    script = tmp_path / "s.json"
    if content is not None:
        script.write_text(content)
    with pytest.raises(ConfigError, match=message):
        fake_from_spec(f"script={script}", ModelOptions())


def test_stop_sequences_cut_at_the_earliest() -> None:
    model = fake_from_spec("const=alpha. beta\ngamma", ModelOptions())
    assert gen(model, prompt("q", stop=("\n", "."))).text == "alpha"
    assert gen(model, prompt("q", stop=("zzz",))).text == "alpha. beta\ngamma"
    assert gen(model, prompt("q", stop=("",))).text == "alpha. beta\ngamma"


def test_failures_are_deterministic() -> None:
    def outcomes(model: FakeModel) -> list[bool]:
        results = []
        for i in range(200):
            try:
                gen(model, prompt(f"question {i}"))
                results.append(True)
            except ModelCallError as e:
                assert "injected failure" in str(e)
                results.append(False)
        return results

    a = outcomes(fake_from_spec("echo,fail=0.2", ModelOptions()))
    b = outcomes(fake_from_spec("echo,fail=0.2", ModelOptions()))
    assert a == b
    assert 20 <= a.count(False) <= 60  # about 20% of 200
    failing = fake_from_spec("echo,fail=0.2,name=flaky", ModelOptions())
    assert failing.identity().name == "flaky"
    assert failing.identity().extra == {"fail_rate": "0.2"}


def test_loglikelihood_is_deterministic() -> None:
    model = resolve_model("fake:echo")
    request = LoglikelihoodRequest(context="Q: 2+2?\nA:", continuations=(" 4", " 5", " four 4"))
    first = asyncio.run(model.loglikelihood(request))
    second = asyncio.run(fake_from_spec("echo", ModelOptions()).loglikelihood(request))
    assert first.logprobs == second.logprobs
    assert all(lp < 0 for lp in first.logprobs)
    assert sum(first.is_greedy) == 1
    assert first.is_greedy[first.logprobs.index(max(first.logprobs))]
    assert first.n_tokens == (1, 1, 2)
    assert first.tokens_evaluated == 3 + 4  # context words once + continuation words
    assert model.supports_loglikelihood


def test_render_chat() -> None:
    model = resolve_model("fake:echo")
    text = model.render_chat([ChatMessage(role="user", content="hi")])
    assert text == "<|user|>\nhi\n<|assistant|>\n"


def test_delay_option() -> None:
    model = fake_from_spec("echo,delay=0.05", ModelOptions())
    assert (gen(model, prompt("x")).latency_s or 0) >= 0.05


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("fake:nope", "Unknown fake model mode 'nope'"),
        ("fake:echo,fail=lots", "is not a number"),
        ("fake:echo,fail=1.5", "between 0 and 1"),
        ("fake:echo,delay=-1", "must not be negative"),
        ("fake:echo,color=red", "Unknown fake model option 'color'"),
        ("fake:", "names no model"),
    ],
)
def test_bad_fake_specs(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_model(spec)


def test_unknown_provider_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError, match=r"Unknown model provider 'opneai'.*'openai'") as e:
        resolve_model("opneai:gpt-4o")
    assert e.value.hint and "fake" in e.value.hint and "llamacpp" in e.value.hint


def test_unknown_bare_name_suggests_an_alias() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'smollm2'"):
        resolve_model("smollm")

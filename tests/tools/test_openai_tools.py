"""Tool calling through the openai provider: the wire format of what is sent, and the parsing
of canned replies (malformed arguments included) from a FastAPI server under uvicorn; then a
real llama_cpp.server with function calling (slow)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from fastapi import FastAPI, Request

from calipers.models import ModelOptions
from calipers.models._openai import OpenAIModel
from calipers.types import (
    ChatMessage,
    GenerateParams,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
)
from tests._servers import ServerThread

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def reply_with(message: dict[str, Any], finish: str = "tool_calls") -> dict[str, Any]:
    return {
        "choices": [{"message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5},
    }


def fn_call(name: str, arguments: Any, cid: str = "c1") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


class Canned:
    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []


@pytest.fixture
def canned() -> Iterator[tuple[Canned, str]]:
    state = Canned()
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict[str, Any]:
        state.bodies.append(await request.json())
        return state.replies.pop(0)

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"data": [{"id": "stub"}]}

    server = ServerThread(app, lifespan="off").start()
    try:
        yield state, f"{server.url}/v1"
    finally:
        server.stop()


def ask(model: OpenAIModel, messages: tuple[ChatMessage, ...]) -> ModelResponse:
    async def go() -> ModelResponse:
        try:
            req = ModelRequest(messages=messages, tools=(WEATHER,), params=GenerateParams())
            return await model.generate(req)
        finally:
            await model.aclose()

    return asyncio.run(go())


USER = (ChatMessage(role="user", content="Weather in Paris?"),)


def test_calls_are_parsed_and_malformed_arguments_are_errors(canned: tuple[Canned, str]) -> None:
    state, url = canned
    state.replies = [
        reply_with(
            {
                "content": None,
                "tool_calls": [
                    fn_call("get_weather", '{"city": "Paris"}', "a"),
                    fn_call("get_weather", {"city": "Rome"}, "b"),  # an object, as Ollama sends
                    fn_call("get_weather", '{"city": "Par', "c"),  # cut off
                    fn_call("get_weather", '["Paris"]', "d"),  # JSON, not an object
                    fn_call("get_weather", "", "e"),  # no arguments
                    {"id": "f", "type": "function"},  # no function at all
                ],
            }
        )
    ]
    r = ask(OpenAIModel("stub", ModelOptions(base_url=url)), USER)
    a, b, c, d, e, f = r.tool_calls
    assert a == ToolCall(id="a", name="get_weather", arguments={"city": "Paris"})
    assert b == ToolCall(id="b", name="get_weather", arguments={"city": "Rome"})
    assert c.arguments is None and c.raw == '{"city": "Par' and "not valid JSON" in (c.error or "")
    assert d.arguments is None and d.raw == '["Paris"]' and "list, not an object" in (d.error or "")
    assert e.arguments == {} and e.error is None
    assert f.name == "" and f.arguments is None and f.error == "no function in call"
    assert r.text == "" and r.finish_reason == "tool_calls"
    assert (r.input_tokens, r.output_tokens) == (10, 5)


def test_the_wire_format_of_tools_calls_and_results(canned: tuple[Canned, str]) -> None:
    state, url = canned
    state.replies = [
        reply_with({"content": None, "function_call": {"name": "get_weather", "arguments": "{}"}}),
        reply_with({"content": "It is 21 C."}, "stop"),
    ]
    choice = {"type": "function", "function": {"name": "get_weather"}}
    model = OpenAIModel("stub", ModelOptions(base_url=url), tool_choice=choice)
    first = ask(model, USER)
    (legacy,) = first.tool_calls  # the legacy function_call form
    assert legacy.name == "get_weather" and legacy.arguments == {}
    calls = (
        ToolCall(id="x1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="x2", name="get_weather", raw="{oops", error="bad"),
    )
    history = (
        *USER,
        ChatMessage(role="assistant", content="", tool_calls=calls),
        ChatMessage(role="tool", content='{"temp_c": 21}', tool_call_id="x1", name="get_weather"),
        ChatMessage(role="tool", content='{"error": "bad"}', tool_call_id="x2", name="get_weather"),
    )
    second = ask(model, history)
    assert second.text == "It is 21 C." and second.tool_calls == ()
    body = state.bodies[1]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]
    assert body["tool_choice"] == choice
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "x1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "x2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{oops"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "x1", "content": '{"temp_c": 21}'},
        {"role": "tool", "tool_call_id": "x2", "content": '{"error": "bad"}'},
    ]
    assert json.loads(model.identity().extra["tool_choice"]) == choice


def test_plain_chat_is_sent_as_before(canned: tuple[Canned, str]) -> None:
    state, url = canned
    state.replies = [reply_with({"content": "hi"}, "stop")]
    model = OpenAIModel("stub", ModelOptions(base_url=url))

    async def go() -> ModelResponse:
        try:
            return await model.generate(ModelRequest(messages=USER))
        finally:
            await model.aclose()

    assert asyncio.run(go()).text == "hi"
    assert "tools" not in state.bodies[0] and "tool_choice" not in state.bodies[0]
    assert state.bodies[0]["messages"] == [{"role": "user", "content": "Weather in Paris?"}]
    assert model.identity().extra == {}


@pytest.mark.slow
def test_a_real_server_with_function_calling(function_server: str) -> None:
    """llama_cpp.server's chatml-function-calling handler, with the call forced (SmolLM2
    never chooses a tool on its own under ``auto``): the call parses into arguments valid
    against the tool's schema, and the result sent back is accepted."""
    choice = {"type": "function", "function": {"name": "get_weather"}}
    model = OpenAIModel("smollm2", ModelOptions(base_url=function_server), tool_choice=choice)
    first = ask(model, USER)
    (call,) = first.tool_calls
    assert call.name == "get_weather" and call.arguments is not None
    jsonschema.validate(call.arguments, WEATHER.parameters)
    history = (
        *USER,
        ChatMessage(role="assistant", content=first.text, tool_calls=first.tool_calls),
        ChatMessage(role="tool", content='{"temp_c": 21}', tool_call_id=call.id, name=call.name),
    )
    plain = OpenAIModel("smollm2", ModelOptions(base_url=function_server))
    second = ask(plain, history)
    assert second.finish_reason in ("stop", "length", "tool_calls")
    assert second.text or second.tool_calls

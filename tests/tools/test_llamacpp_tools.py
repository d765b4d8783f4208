"""Tool calling on llama.cpp: the prompt block, how tool messages render through SmolLM2's
system/user/assistant template, the reply schema (checked with jsonschema, independently of
the grammar compiled from it), reply parsing; and (slow) the issue's test: every one of
SmolLM2's replies under the grammar parses into calls whose arguments are valid against the
tool's own schema, or is a plain answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from calipers.models import ModelOptions
from calipers.models._llamacpp import LlamaCppModel
from calipers.models._llamacpp_tools import (
    ARG_MAX_CHARS,
    MAX_CALLS,
    TOOL_FORMAT,
    chat_messages,
    grammar_for,
    output_schema,
    parse_reply,
    tools_prompt,
)
from calipers.types import ChatMessage, GenerateParams, ModelRequest, ToolCall, ToolSpec

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        "required": ["city"],
    },
)
TIMER = ToolSpec(
    name="set_timer",
    description="Start a countdown timer.",
    parameters={
        "type": "object",
        "properties": {
            "minutes": {"type": "integer", "minimum": 1},
            "label": {"type": "string"},
            "loud": {"type": "boolean"},
        },
        "required": ["minutes"],
    },
)
SUM = ToolSpec(
    name="add_numbers",
    description="Add a list of numbers.",
    parameters={
        "type": "object",
        "properties": {
            "numbers": {"type": "array", "items": {"type": "number"}},
            "options": {
                "type": "object",
                "properties": {"round_to": {"type": "integer"}},
            },
        },
        "required": ["numbers"],
    },
)
TOOLS = (WEATHER, TIMER, SUM)


def test_the_prompt_describes_every_tool_and_argument() -> None:
    text = tools_prompt(TOOLS)
    for line in (
        "- get_weather: Current weather for a city.",
        "    city (string, required): City name",
        '    unit (one of "celsius", "fahrenheit")',
        "    minutes (integer, required)",
        "    numbers (array of number, required)",
        "    options (object with round_to)",
        'To answer without a tool: {"answer": "<your answer>"}',
    ):
        assert line in text.splitlines(), line


def test_tool_messages_render_through_a_system_user_assistant_template() -> None:
    calls = (
        ToolCall(id="call_0_0", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_0_1", name="set_timer", arguments={"minutes": 5}),
    )
    history = (
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="Weather in Paris, and a 5 minute timer."),
        ChatMessage(role="assistant", content="", tool_calls=calls),
        ChatMessage(
            role="tool", content='{"temp_c": 21}', tool_call_id="call_0_0", name="get_weather"
        ),
        ChatMessage(role="tool", content='{"ok": true}', tool_call_id="call_0_1", name="set_timer"),
        ChatMessage(role="assistant", content="21 C, timer set."),
        ChatMessage(role="user", content="Thanks"),
    )
    msgs = chat_messages(ModelRequest(messages=history, tools=TOOLS))
    assert [m.role for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[0].content == "Be brief.\n\n" + tools_prompt(TOOLS)
    assert json.loads(msgs[2].content) == [
        {"tool": "get_weather", "arguments": {"city": "Paris"}},
        {"tool": "set_timer", "arguments": {"minutes": 5}},
    ]
    assert msgs[3].content == (
        'Tool results:\nget_weather returned: {"temp_c": 21}\nset_timer returned: {"ok": true}'
    )
    assert json.loads(msgs[4].content) == {"answer": "21 C, timer set."}
    plain = (ChatMessage(role="user", content="hi"),)
    assert chat_messages(ModelRequest(messages=plain)) == plain  # no tools: untouched


def test_smollm2_template_sees_no_tool_role(smollm2: Path) -> None:
    model = LlamaCppModel(smollm2)  # the header only: no weights load
    history = (
        ChatMessage(role="user", content="Weather?"),
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=(ToolCall(id="c", name="get_weather", arguments={"city": "Oslo"}),),
        ),
        ChatMessage(role="tool", content="cold", tool_call_id="c", name="get_weather"),
    )
    text = model.render_chat(chat_messages(ModelRequest(messages=history, tools=(WEATHER,))))
    roles = [line.split("<|im_start|>")[1] for line in text.splitlines() if "<|im_start|>" in line]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert "get_weather returned: cold" in text
    assert model.tool_format() == TOOL_FORMAT
    assert "tool_format" not in model.identity().extra  # older runs stay the same model


def valid(value: Any, tools: tuple[ToolSpec, ...] = TOOLS) -> bool:
    try:
        jsonschema.validate(value, output_schema(tools))
    except jsonschema.ValidationError:
        return False
    return True


def test_the_reply_schema() -> None:
    call = {"tool": "get_weather", "arguments": {"city": "Paris"}}
    assert valid(call)
    assert valid({"answer": "Hello"})
    assert valid([call, {"tool": "set_timer", "arguments": {"minutes": 5, "loud": True}}])
    assert valid({"tool": "add_numbers", "arguments": {"numbers": [1, 2.5]}})
    assert not valid({"tool": "get_weather", "arguments": {"town": "Paris"}})  # unknown arg
    assert not valid({"tool": "get_weather", "arguments": {}})  # required city missing
    assert not valid({"tool": "get_weather", "arguments": {"city": "P", "unit": "kelvin"}})
    assert not valid({"tool": "set_timer", "arguments": {"minutes": "5"}})
    assert not valid({"tool": "nope", "arguments": {}})
    assert not valid({"answer": "x", "tool": "get_weather"})
    assert not valid([call] * (MAX_CALLS + 1))
    assert not valid({"tool": "get_weather", "arguments": {"city": "x" * (ARG_MAX_CHARS + 1)}})
    assert not valid({"tool": "add_numbers", "arguments": {"numbers": list(range(11))}})
    grammar = grammar_for(TOOLS)
    assert grammar is grammar_for(TOOLS)  # compiled once per set of tools
    assert '"\\"get_weather\\""' in grammar._grammar and '"\\"answer\\""' in grammar._grammar


def test_parsing_replies() -> None:
    call = '{"tool": "get_weather", "arguments": {"city": "Paris"}}'
    assert parse_reply(call, "call_0") == (
        "",
        (ToolCall(id="call_0_0", name="get_weather", arguments={"city": "Paris"}),),
    )
    text, calls = parse_reply(f"[{call}, {call}]", "call_2")
    assert text == ""
    assert [c.id for c in calls] == ["call_2_0", "call_2_1"]
    assert parse_reply('{ "answer": "It is \\"sunny\\"." }', "c") == ('It is "sunny".', ())
    assert parse_reply('{"answer": "cut off in the mid\\u00', "c") == ("cut off in the mid", ())
    assert parse_reply('{"answer": "two\nlines"}', "c") == ("two\nlines", ())  # raw newline
    raw_newline = '{"tool": "get_weather", "arguments": {"city": "Par\nis"}}'
    assert parse_reply(raw_newline, "c")[1][0].arguments == {"city": "Par\nis"}
    (cut,) = parse_reply('{"tool": "get_weather", "arguments": {"city": "Par', "c")[1]
    assert cut.name == "get_weather" and cut.arguments is None
    assert cut.raw is not None and "not complete JSON" in (cut.error or "")


QUESTIONS = [
    "What's the weather in Paris?",
    "Weather in Tokyo in fahrenheit, please.",
    "Is it raining in London?",
    "Set a timer for 10 minutes.",
    "Start a loud 3 minute timer called eggs.",
    "Add 3, 4.5 and 10.",
    "What is 2 plus 2 plus 7? Round to 0 digits.",
    "Who wrote Hamlet?",
    "Tell me a joke.",
    "Weather in Berlin and a timer for 5 minutes.",
    "How cold is it in Oslo?",
    "Timer: 25 minutes, label focus.",
    "Sum these: 1, 1, 2, 3, 5, 8.",
    "What is the capital of Italy?",
    "I need the forecast for Madrid in celsius.",
    "Remind me in 45 minutes.",
    "Add up 100 and 250.",
    "Write a haiku about the sea.",
    "Weather for New York City.",
    "Set two timers: 1 minute and 2 minutes.",
    "What's the sum of 0.5 and 0.25?",
    "Translate 'cat' into French.",
    "Check the weather in Sydney, Australia.",
    "A 90 minute timer for the roast, not loud.",
    "Total of 7, 8, 9.",
    "Hello!",
]


def check_reply(text: str, calls: tuple[ToolCall, ...]) -> str:
    """'answer' or 'call'; fails unless every call parsed and fits its tool's own schema."""
    if not calls:
        return "answer"
    schemas = {t.name: t.parameters for t in TOOLS}
    for c in calls:
        assert c.error is None and c.arguments is not None, c
        jsonschema.validate(c.arguments, schemas[c.name])
    return "call"


@pytest.mark.slow
def test_every_smollm2_reply_parses_under_the_grammar(smollm2: Path) -> None:
    """30 requests: 26 questions, then 4 follow-ups with tool results in the history."""
    model = LlamaCppModel(smollm2, ModelOptions(n_threads=4))
    params = GenerateParams(max_tokens=384)

    async def go() -> list[str]:
        kinds = []
        try:
            firsts = []
            for q in QUESTIONS:
                msgs = (ChatMessage(role="user", content=q),)
                r = await model.generate(ModelRequest(messages=msgs, tools=TOOLS, params=params))
                kinds.append(check_reply(r.text, r.tool_calls))
                firsts.append((msgs, r))
            followed = [(m, r) for m, r in firsts if r.tool_calls][:4]
            assert len(followed) == 4, kinds
            for msgs, r in followed:
                results = tuple(
                    ChatMessage(role="tool", content='{"ok": true}', tool_call_id=c.id, name=c.name)
                    for c in r.tool_calls
                )
                history = (
                    *msgs,
                    ChatMessage(role="assistant", content="", tool_calls=r.tool_calls),
                    *results,
                )
                r2 = await model.generate(
                    ModelRequest(messages=history, tools=TOOLS, params=params)
                )
                kinds.append(check_reply(r2.text, r2.tool_calls))
                assert all(c.id.startswith("call_1_") for c in r2.tool_calls)
        finally:
            await model.aclose()
        return kinds

    kinds = asyncio.run(go())
    assert len(kinds) == 30
    print(f"calls {kinds.count('call')}, answers {kinds.count('answer')}")

"""Reading answers for the log: whole bodies, SSE streams, and what is not an answer."""

from __future__ import annotations

import json

from calipers.gateway._parse import parse_answer
from tests.gateway.conftest import sse_bytes


def test_whole_chat_and_completion() -> None:
    chat = {
        "model": "m1",
        "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    }
    p = parse_answer(json.dumps(chat).encode(), endpoint="chat/completions", stream=False)
    assert (p.text, p.finish_reason, p.input_tokens, p.output_tokens, p.model, p.invalid) == (
        "hi",
        "stop",
        5,
        1,
        "m1",
        None,
    )
    comp = {"choices": [{"text": " yes", "finish_reason": "length"}]}
    p = parse_answer(json.dumps(comp).encode(), endpoint="completions", stream=False)
    assert (p.text, p.input_tokens, p.output_tokens) == (" yes", None, None)  # no usage: None


def test_tool_calls_are_kept_as_json() -> None:
    calls = [{"id": "1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    body = {"choices": [{"message": {"content": None, "tool_calls": calls}}]}
    p = parse_answer(json.dumps(body).encode(), endpoint="chat/completions", stream=False)
    assert p.text is not None and json.loads(p.text) == calls


def test_stream_text_is_the_joined_deltas() -> None:
    p = parse_answer(sse_bytes("x", "a b  c"), endpoint="chat/completions", stream=True)
    assert (p.text, p.finish_reason, p.model, p.invalid) == ("a b  c", "stop", "x", None)


def test_stream_usage_from_the_final_chunk() -> None:
    events = [
        {"choices": [{"text": "1", "finish_reason": None}]},
        {"choices": [{"text": "2", "finish_reason": "length"}]},
        {"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 2}},
    ]
    raw = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    p = parse_answer(raw + b"data: [DONE]\n\n", endpoint="completions", stream=True)
    assert (p.text, p.finish_reason, p.input_tokens, p.output_tokens) == ("12", "length", 4, 2)


def test_not_answers() -> None:
    for raw, stream, why in [
        (b"<html>", False, "not JSON"),
        (b'{"object": "list"}', False, "no choices"),
        (b"[1, 2]", False, "no choices"),
        (b"data: [DONE]\n\n", True, "no data events"),
        (b"data: {oops\n\n", True, "invalid SSE event"),
        (b'data: {"error": {"message": "boom"}}\n\n', True, "error event"),
    ]:
        p = parse_answer(raw, endpoint="chat/completions", stream=stream)
        assert p.invalid is not None and why in p.invalid, (raw, p)


def test_both_redactors_remove_secrets_and_personal_data() -> None:
    from calipers.gateway._redact_hook import _fallback, make_redactor

    text = "k sk-abcdefghijklmnopqrstuvwx, Bearer abcdefghijklmnopqrstu, password=hunter2hunter2, "
    text += "bob@example.com, +44 20 7946 0958"
    for personal in (True, False):
        for redact in (make_redactor(personal=personal), _fallback(personal)):
            out = redact(text)
            assert "abcdefghijklmnop" not in out and "hunter2" not in out
            assert "[API_KEY]" in out and "Bearer [TOKEN]" in out
            assert ("bob@example.com" in out) is not personal
            assert ("7946" in out) is not personal

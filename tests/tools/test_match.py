"""The AST matcher, rule by rule, on constructed calls: each case states by hand whether the
call passes and which rule fails (BFCL's checker semantics)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from calipers.scorers import build_scorer
from calipers.scorers._toolcall import match_calls
from calipers.types import ModelResponse, Sample, SampleOutput, Step, ToolCall, Transcript

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ratio": {"type": "number"},
        "exact": {"type": "boolean"},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
    },
    "required": ["city"],
}
TOOLS = {"get_weather": WEATHER, "get_time": {"type": "object", "properties": {}}}
ANSWER: dict[str, Any] = {
    "get_weather": {
        "city": ["New York", "NYC"],
        "unit": ["", "celsius"],
        "days": [3],
        "tags": [["a", "b"], ""],
        "ratio": ["", 0.5],
        "exact": ["", True],
        "where": ["", {"lat": [40.7]}],
    }
}


def call(name: str = "get_weather", **args: Any) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=args)


def check(calls: list[ToolCall], expected: list[dict[str, Any]] | None = None) -> str:
    return match_calls(calls, [ANSWER] if expected is None else expected, TOOLS).reason


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"city": "New York", "days": 3}, "ok"),  # optional arguments left out
        ({"city": "new-york", "days": 3}, "ok"),  # case, '-' ignored, as BFCL's standardisation
        ({"city": "NYC", "days": 3, "unit": "celsius"}, "ok"),  # another allowed value
        ({"city": "NYC", "days": 3, "ratio": 1 / 2}, "ok"),
        ({"city": "NYC", "days": 3, "tags": ["A", "b"]}, "ok"),  # lists element by element
        ({"city": "NYC", "days": 3, "where": {"lat": 40.7}}, "ok"),  # a dict argument
        ({"days": 3}, "missing_required"),  # the schema requires city
        ({"city": "NYC"}, "missing_argument"),  # days has no "" among its allowed values
        ({"city": "NYC", "days": 3, "country": "US"}, "unexpected_argument"),  # not in the tool
        ({"city": "NYC", "days": "3"}, "wrong_type"),  # a string for an integer
        ({"city": "NYC", "days": 3.0}, "wrong_type"),  # a float is not an integer
        ({"city": "NYC", "days": True}, "wrong_type"),  # a boolean is not an integer
        ({"city": "NYC", "days": 3, "tags": ["a", 2]}, "wrong_type"),  # an item's type
        ({"city": "NYC", "days": 3, "exact": "yes"}, "wrong_type"),
        ({"city": "Boston", "days": 3}, "wrong_value"),
        ({"city": "NYC", "days": 4}, "wrong_value"),
        ({"city": "NYC", "days": 3, "unit": "fahrenheit"}, "wrong_value"),  # valid, not allowed
        ({"city": "NYC", "days": 3, "tags": ["b", "a"]}, "wrong_value"),  # order matters
        ({"city": "NYC", "days": 3, "where": {"lat": 1.0}}, "wrong_value"),
    ],
)
def test_single_call_rules(args: dict[str, Any], reason: str) -> None:
    assert check([call(**args)]) == reason


def test_an_integer_passes_where_a_number_is_asked() -> None:
    ans = {"get_weather": {"city": ["NYC"], "days": [3], "ratio": [1]}}
    assert check([call(city="NYC", days=3, ratio=1)], [ans]) == "ok"
    assert check([call(city="NYC", days=3, ratio=1.0)], [ans]) == "ok"


def test_name_count_and_parse_rules() -> None:
    assert check([call("get_time")]) == "wrong_name"
    assert check([]) == "no_call"
    assert check([call(city="NYC", days=3), call(city="NYC", days=3)]) == "wrong_count"
    bad = ToolCall(id="c", name="get_weather", raw="{city: NYC", error="not JSON")
    assert check([bad]) == "unparsed_arguments"


def test_irrelevance_expects_no_call() -> None:
    assert check([], []) == "ok"
    assert check([call("get_time")], []) == "called_when_none_expected"
    bad = ToolCall(id="c", name="get_time", raw="oops", error="not JSON")
    assert check([bad], []) == "called_when_none_expected"  # an attempt is a call


def test_parallel_calls_match_in_any_order_each_used_once() -> None:
    paris = {"get_weather": {"city": ["Paris"], "days": [1]}}
    rome = {"get_weather": {"city": ["Rome"], "days": [1]}}
    a, b = call(city="Paris", days=1), call(city="Rome", days=1)
    assert check([a, b], [paris, rome]) == "ok"
    assert check([b, a], [paris, rome]) == "ok"
    assert check([a, a], [paris, rome]) == "no_match"  # one call cannot answer both
    assert check([a, call(city="Rome", days=2)], [paris, rome]) == "no_match"
    mixed: list[dict[str, Any]] = [paris, {"get_time": {}}]
    assert check([call("get_time"), a], mixed) == "ok"


def run_scorer(sample: Sample, output: SampleOutput) -> Any:
    return asyncio.run(build_scorer("tool_call_match")(sample, output))


def test_scorer_reads_the_first_model_step() -> None:
    sample = Sample(
        id="s",
        input="weather in NYC for 3 days",
        target=json.dumps([ANSWER]),
        fields={"tools": [{"name": "get_weather", "parameters": WEATHER}]},
    )
    good, bad = call(city="NYC", days=3), call(city="NYC", days=9)
    steps = (
        Step(index=0, kind="model", tool_calls=(good,)),
        Step(index=1, kind="tool", tool_call=good, text="{}"),
        Step(index=2, kind="model", tool_calls=(bad,)),  # a later step does not count
    )
    out = SampleOutput(response=ModelResponse(text=""), transcript=Transcript(steps=steps))
    score = run_scorer(sample, out)
    assert score.values == {"call_acc": 1.0}
    assert score.metadata["reason"] == "ok"
    first_bad = Transcript(steps=(Step(index=0, kind="model", tool_calls=(bad,)),))
    score = run_scorer(sample, SampleOutput(response=ModelResponse(text=""), transcript=first_bad))
    assert score.values == {"call_acc": 0.0}
    assert score.metadata["reason"] == "wrong_value"
    assert "days=9" in (score.explanation or "")


def test_a_list_of_dicts_is_matched_item_by_item() -> None:
    """BFCL writes a list-of-dicts argument as a list of dicts of allowed values."""
    schema = {
        "type": "object",
        "properties": {
            "conditions": {
                "type": "array",
                "items": {"type": "object", "properties": {"field": {"type": "string"}}},
            }
        },
    }
    tools = {"query": schema}
    ans = [{"query": {"conditions": [[{"field": ["age", "Age"]}, {"field": ["job"]}]]}}]

    def reason(conditions: Any) -> str:
        return match_calls([call("query", conditions=conditions)], ans, tools).reason

    assert reason([{"field": "AGE"}, {"field": "job"}]) == "ok"
    assert reason([{"field": "age"}, {"field": "name"}]) == "wrong_value"
    assert reason([{"field": "age"}]) == "wrong_value"  # one item short
    assert reason([{"field": ["age"]}, {"field": "job"}]) == "wrong_type"

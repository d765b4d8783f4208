"""Baseline agents: do-nothing never acts; random-tool calls real tools with schema-valid
arguments, reproducibly per request and differently per epoch; the oracle plays the world's
own answers and fails loudly where the world has none."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import jsonschema
import pytest

from calipers.errors import ConfigError, NotSupportedError
from calipers.models import list_providers, resolve_model
from calipers.models._baseline import MAX_RANDOM_CALLS, random_arguments
from calipers.runner import run
from calipers.store import Store
from calipers.types import ChatMessage, GenerateParams, ModelRequest, ToolCall
from tests.agent import _world

SCHEMAS = [
    _world.TOOLS[0].parameters,
    _world.TOOLS[1].parameters,
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 3, "maximum": 5},
            "x": {"type": "number", "minimum": -1, "maximum": 1},
            "flag": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
            "mode": {"anyOf": [{"const": "fast"}, {"type": "null"}]},
            "nested": {
                "type": "object",
                "properties": {"id": {"type": "string", "minLength": 4}},
                "required": ["id"],
            },
        },
        "required": ["n", "tags", "nested"],
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_random_arguments_are_valid_for_their_schema(schema: dict[str, object]) -> None:
    rng = random.Random(0)
    seen = set()
    for _ in range(200):
        value = random_arguments(schema, rng, ["A1", "hello"])
        jsonschema.validate(value, schema)  # raises when invalid
        seen.add(repr(value))
    assert len(seen) > 3  # values vary


def request(seed: int = 0, tool_turns: int = 0) -> ModelRequest:
    msgs = [ChatMessage(role="user", content="Please refund order A1.")]
    for i in range(tool_turns):
        call = ToolCall(id=f"c{i}", name="status", arguments={"order_id": "A1"})
        msgs.append(ChatMessage(role="assistant", content="", tool_calls=(call,)))
        msgs.append(ChatMessage(role="tool", content="{}", tool_call_id=f"c{i}", name="status"))
    return ModelRequest(
        messages=tuple(msgs), tools=_world.TOOLS, params=GenerateParams(seed=seed, temperature=1)
    )


def test_random_tool_is_reproducible_per_request_and_differs_per_epoch() -> None:
    agent = resolve_model("baseline:random-tool")
    first = [asyncio.run(agent.generate(request(seed))) for seed in range(20)]
    again = [asyncio.run(agent.generate(request(seed))) for seed in range(20)]
    assert first == again
    calls = [r.tool_calls[0] for r in first]
    assert {c.name for c in calls} == {"status", "refund"}  # both tools get drawn
    assert len({(c.name, str(c.arguments)) for c in calls}) > 3
    for c in calls:
        spec = next(t for t in _world.TOOLS if t.name == c.name)
        jsonschema.validate(c.arguments, spec.parameters)
    # it ends its turn with a reply after at most MAX_RANDOM_CALLS calls
    done = asyncio.run(agent.generate(request(0, tool_turns=MAX_RANDOM_CALLS)))
    assert done.tool_calls == () and done.text
    no_tools = ModelRequest(messages=request().messages, params=GenerateParams())
    assert asyncio.run(agent.generate(no_tools)).tool_calls == ()


def test_do_nothing_never_calls_a_tool() -> None:
    agent = resolve_model("baseline:do-nothing")
    for seed in range(5):
        r = asyncio.run(agent.generate(request(seed)))
        assert r.tool_calls == () and "not made any changes" in r.text


def test_baselines_are_listed_and_unknown_ones_refused() -> None:
    info = next(p for p in list_providers() if p.prefix == "baseline")
    assert "baseline:oracle" in info.usage and "baseline:random-tool" in info.usage
    with pytest.raises(ConfigError, match="Unknown baseline agent 'smart'"):
        resolve_model("baseline:smart")
    oracle = resolve_model("baseline:oracle")
    with pytest.raises(NotSupportedError, match="only an agent's task"):
        asyncio.run(oracle.generate(request()))


def test_the_oracle_passes_the_world_and_fails_loudly_without_an_oracle(tmp_path: Path) -> None:
    _world.register()
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        good = run("baseline:oracle", "till", store=store)
        recs = {r.sample_id: r for r in store.get_samples(good.run_id)}
        # every item but the one whose grader wants another order than the user asked for
        assert {i: r.scores["success"] for i, r in recs.items() if r.scores} == {
            "r1": 1.0,
            "r2": 1.0,
            "r3": 1.0,
            "r4": 1.0,
            "c1": 1.0,
            "x1": 0.0,
        }
        bad = run("baseline:oracle", "till_no_oracle", store=store, limit=2)
        errs = [r.error for r in store.get_samples(bad.run_id)]
    assert all(e and "NoOracleTill" in e and "has no oracle" in e for e in errs)

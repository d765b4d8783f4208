"""The agent loop: tool calls run and answered, every step stored, user turns from the
environment, the golden history, limits, and failures that are errors (never passes, never
hangs)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from calipers.models import FakeModel
from calipers.runner import run
from calipers.scorers import scorer
from calipers.store import Store
from calipers.tasks import LoadContext, Task, register_task
from calipers.types import (
    ChatMessage,
    EpisodeLimits,
    ModelRequest,
    ModelResponse,
    Sample,
    SampleOutput,
    Score,
    ToolCall,
    ToolError,
    ToolSpec,
    Turn,
)

COUNTER_TOOLS = (
    ToolSpec(name="read", description="The counter's value"),
    ToolSpec(
        name="add",
        description="Add to the counter",
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    ToolSpec(name="hang", description="Never answers"),
)


class Counter:
    """A world with one number. The user asks for it to reach the item's target, then says
    thanks after the first reply; golden replies stand in when the item asks for them."""

    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self.value = 0
        self.turn = 0
        self.tools = COUNTER_TOOLS

    def opening(self) -> tuple[ChatMessage, ...]:
        return (
            ChatMessage(role="system", content="Keep the counter."),
            ChatMessage(role="user", content=self.sample.input),
        )

    async def call_tool(self, call: ToolCall) -> str:
        args = call.arguments or {}
        if call.name == "read":
            return json.dumps({"value": self.value})
        if call.name == "add":
            if not isinstance(args.get("n"), int):
                raise ToolError("n must be an integer")
            self.value += args["n"]
            return json.dumps({"value": self.value})
        await asyncio.sleep(3600)  # hang
        return ""

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        self.turn += 1
        if self.turn >= int(self.sample.metadata.get("turns", 1)):
            return None
        golden = self.sample.metadata.get("golden")
        return Turn(user=f"turn {self.turn + 1}", assistant=golden)

    def final_state(self) -> dict[str, Any]:
        return {"value": self.value}

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        return None


@scorer("counter_reached", metrics=("reached",))
def counter_reached() -> Any:
    """1 when the world's counter ended at the item's target."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        assert output.transcript is not None and output.transcript.state is not None
        hit = output.transcript.state["value"] == sample.target
        return Score(values={"reached": float(hit)}, answer=str(output.transcript.state))

    return score


def counter_task(
    samples: Sequence[Sample], limits: EpisodeLimits | None = None, name: str = "counter"
) -> Task:
    return Task(
        name=name,
        version="1",
        description="test world",
        kind="episode",
        load=lambda ctx: list(samples),
        scorers=(counter_reached(),),
        environment=Counter,
        limits=limits or EpisodeLimits(max_steps=6, tool_timeout_s=0.2),
        episode_card={"world": "counter"},
    )


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(id=f"c{name}", name=name, arguments=args)


def agent(request: ModelRequest) -> ModelResponse:
    """Adds 2 then 1 (a bad call in between), then says it is done."""
    msgs = request.messages or ()
    done = [m for m in msgs if m.role == "tool"]
    plan = [
        call("add", n=2),
        call("add", n="x"),
        ToolCall(id="bad", name="add", raw="{n: 1", error="not JSON"),
        call("nosuch"),
        call("add", n=1),
    ]
    if len(done) < len(plan):
        return ModelResponse(text="", tool_calls=(plan[len(done)],))
    return ModelResponse(text=f"done after {len(done)} calls")


def run_task(tmp_path: Path, task: Task, model: FakeModel) -> tuple[Any, list[Any]]:
    register_task(task.name, lambda: task)
    with Store.open(f"sqlite:///{tmp_path / 's.db'}") as store:
        result = run(model, task.name, store=store)
        return result, store.get_samples(result.run_id)


def test_tool_calls_run_and_every_step_is_stored(tmp_path: Path) -> None:
    sample = Sample(id="a", input="Make it 3.", target=3)
    result, (rec,) = run_task(tmp_path, counter_task([sample]), FakeModel(agent))
    assert rec.error is None and rec.scores == {"reached": 1.0}
    ep = rec.score_details["episode"]
    kinds = [s["kind"] for s in ep["steps"]]
    assert kinds == ["model", "tool"] * 5 + ["model"]
    tools = [s for s in ep["steps"] if s["kind"] == "tool"]
    assert [t["error"] for t in tools] == [
        None,
        "n must be an integer",
        "not JSON",
        "there is no tool named 'nosuch' (tools: read, add, hang)",
        None,
    ]
    assert json.loads(tools[0]["text"]) == {"value": 2}
    assert ep["state"] == {"value": 3} and ep["stopped"] == "done"
    assert rec.response == "done after 5 calls"
    assert rec.prompt["tools"][1]["name"] == "add"  # the opening request as stored
    card = result.methodology.tasks["counter"].episode
    assert card["tools"] == ["add", "hang", "read"] and card["world"] == "counter"
    assert card["limits"]["max_steps"] == 6


def test_the_step_limit_stops_an_agent_that_never_finishes(tmp_path: Path) -> None:
    def forever(request: ModelRequest) -> ModelResponse:
        return ModelResponse(text="", tool_calls=(call("read"),))

    sample = Sample(id="a", input="Make it 3.", target=3)
    _r, (rec,) = run_task(tmp_path, counter_task([sample], name="c2"), FakeModel(forever))
    ep = rec.score_details["episode"]
    assert ep["stopped"] == "max_steps"
    assert sum(s["kind"] == "model" for s in ep["steps"]) == 6
    assert rec.error is None and rec.scores == {"reached": 0.0}  # not finished: a failure


def test_a_stuck_tool_is_an_error_not_a_pass_or_a_hang(tmp_path: Path) -> None:
    def hangs(request: ModelRequest) -> ModelResponse:
        if any(m.role == "tool" for m in request.messages or ()):
            return ModelResponse(text="done")
        return ModelResponse(text="", tool_calls=(call("add", n=3), call("hang")))

    sample = Sample(id="a", input="Make it 3.", target=3)
    _r, (rec,) = run_task(tmp_path, counter_task([sample], name="c3"), FakeModel(hangs))
    assert rec.scores is None
    assert rec.error == "tool: tool 'hang' did not answer within 0.2 s"
    ep = rec.score_details["episode"]
    assert ep["stopped"] == "error" and ep["state"] == {"value": 3}
    assert ep["steps"][-1]["error"].startswith("tool 'hang' did not answer")


def test_user_turns_and_the_golden_history(tmp_path: Path) -> None:
    seen: list[list[str]] = []

    def talker(request: ModelRequest) -> str:
        msgs = request.messages or ()
        seen.append([m.content for m in msgs if m.role == "assistant"])
        return f"reply {sum(m.role == 'user' for m in msgs)}"

    own = Sample(id="own", input="hi", target=0, metadata={"turns": 3})
    gold = Sample(id="gold", input="hi", target=0, metadata={"turns": 3, "golden": "GOLD"})
    _r, recs = run_task(tmp_path, counter_task([own, gold], name="c4"), FakeModel(talker))
    by = {r.sample_id: r.score_details["episode"] for r in recs}
    assert by["own"]["replies"] == ["reply 1", "reply 2", "reply 3"]
    assert by["gold"]["replies"] == ["reply 1", "reply 2", "reply 3"]
    assert ["reply 1", "reply 2"] in seen  # own history: the model sees its own replies
    assert ["GOLD", "GOLD"] in seen  # golden history: the reference replies stand in
    users = [s for s in by["gold"]["steps"] if s["kind"] == "user"]
    assert [u["replaced"] for u in users] == ["reply 1", "reply 2"]


def test_an_episode_task_needs_an_environment() -> None:
    with pytest.raises(ValueError, match="needs an environment"):
        Task(
            name="x",
            version="1",
            description="",
            kind="episode",
            load=lambda ctx: [],
            scorers=(),
        )
    assert LoadContext().seed == 0

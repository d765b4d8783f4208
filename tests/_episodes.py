"""A toy tool world for episode tests: a counter the agent reads and adds to, a tool that
hangs, a scorer reading the world's end state, and a scripted agent (one module, so the scorer
registers once however many test files use it)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from calipers.scorers import scorer
from calipers.tasks import Task
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

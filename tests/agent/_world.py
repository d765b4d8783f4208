"""A small test-local tool world (a till that refunds orders), its scorer, an oracle, and a
planted agent, registered as task ``till`` and provider ``planted``.

Items (``metadata``):
- ``refund``: the user asks for order X to be refunded; success: X refunded, nothing else.
- ``check``: the user asks only for X's status; success: nothing refunded. Doing nothing
  passes, so the trivial baselines flag these items invalid.
- ``broken``: the user asks to refund X, but the grader wants Y refunded: the oracle fails it.

The planted agent (``planted:...``) reads the epoch seed off the request: on item ``i`` it
refunds correctly when ``seed % period[i] == 0`` (period 1: always, 2: every other trial,
0: never), so per-item success rates are known exactly for any number of trials.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from calipers.models import FakeModel, ModelOptions, ModelProvider, register_provider
from calipers.scorers import scorer
from calipers.tasks import Task, register_task
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

ORDERS = ("A1", "B2", "C3", "D4", "E5", "F6")
TOOLS = (
    ToolSpec(
        name="status",
        description="An order's status",
        parameters={
            "type": "object",
            "properties": {"order_id": {"type": "string", "enum": list(ORDERS)}},
            "required": ["order_id"],
        },
    ),
    ToolSpec(
        name="refund",
        description="Refund an order",
        parameters={
            "type": "object",
            "properties": {
                "order_id": {"type": "string", "enum": list(ORDERS)},
                "reason": {"type": "string", "maxLength": 20},
            },
            "required": ["order_id"],
        },
    ),
)


class Till:
    def __init__(self, sample: Sample) -> None:
        self.sample = sample
        self.refunded: list[str] = []
        self.tools = TOOLS

    def opening(self) -> tuple[ChatMessage, ...]:
        return (
            ChatMessage(role="system", content="You run the till. Refund only when asked."),
            ChatMessage(role="user", content=self.sample.input),
        )

    async def call_tool(self, call: ToolCall) -> str:
        order = (call.arguments or {}).get("order_id")
        if order not in ORDERS:
            raise ToolError(f"no order {order!r}")
        if call.name == "refund":
            self.refunded.append(order)
            return json.dumps({"refunded": order})
        return json.dumps({"order": order, "status": "delivered"})

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        return None  # one user turn

    def final_state(self) -> dict[str, Any]:
        return {"refunded": list(self.refunded)}

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        m = self.sample.metadata
        done = any(x.role == "tool" for x in messages)
        if done:
            return ModelResponse(text="Done.")
        name = "refund" if m["kind"] != "check" else "status"
        call = ToolCall(id="o1", name=name, arguments={"order_id": m["order"]})
        return ModelResponse(text="", tool_calls=(call,))


class NoOracleTill(Till):
    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        return None


@scorer("till_outcome", metrics=("success", "end_state", "answered"))
def till_outcome() -> Any:
    """success: the refunds are exactly what the grader wants; end_state the same;
    answered: the final reply is not empty (a second component)."""

    async def score(sample: Sample, output: SampleOutput) -> Score:
        assert output.transcript is not None and output.transcript.state is not None
        want = sample.metadata.get("want", [])
        ok = output.transcript.state["refunded"] == want
        answered = bool(output.transcript.final_text.strip())
        return Score(
            values={"success": float(ok), "end_state": float(ok), "answered": float(answered)}
        )

    return score


def items() -> list[Sample]:
    """Six items: four refunds (agent periods 1, 2, 0, 1), one check, one broken."""
    rows = [
        ("r1", "refund", "A1", ["A1"], 1),
        ("r2", "refund", "B2", ["B2"], 2),
        ("r3", "refund", "C3", ["C3"], 0),
        ("r4", "refund", "D4", ["D4"], 1),
        ("c1", "check", "E5", [], 1),
        ("x1", "broken", "F6", ["A1"], 1),
    ]
    out = []
    for sid, kind, order, want, period in rows:
        verb = "What is the status of" if kind == "check" else "Please refund"
        out.append(
            Sample(
                id=sid,
                input=f"{verb} order {order}.",
                target=json.dumps(want),
                metadata={"kind": kind, "order": order, "want": want, "period": period},
            )
        )
    return out


PERIODS = {s.id: s.metadata["period"] for s in items()}


def till_task(name: str = "till", environment: Any = Till) -> Task:
    return Task(
        name=name,
        version="1",
        description="test till world",
        kind="episode",
        load=lambda ctx: items()[: ctx.n] if ctx.n else items(),
        scorers=(till_outcome(),),
        environment=environment,
        limits=EpisodeLimits(max_steps=6, tool_timeout_s=2.0),
    )


def planted_responder(request: ModelRequest) -> ModelResponse:
    """Refund the order the user named when ``seed % period == 0`` (see the module doc)."""
    msgs = request.messages or ()
    user = next(m.content for m in msgs if m.role == "user")
    order = user.rstrip(".").split()[-1]
    period = {s.input: s.metadata["period"] for s in items()}[user]
    if any(m.role == "tool" for m in msgs):
        return ModelResponse(text="All done.")
    seed = request.params.seed or 0
    if "status" in user or period == 0 or seed % period != 0:
        return ModelResponse(text="I looked into it.")
    call = ToolCall(id="p1", name="refund", arguments={"order_id": order})
    return ModelResponse(text="", tool_calls=(call,))


def _planted(rest: str, options: ModelOptions) -> ModelProvider:
    return FakeModel(planted_responder, name=rest or "planted")


def _till() -> Task:
    return till_task()


def _till_no_oracle() -> Task:
    return till_task("till_no_oracle", NoOracleTill)


def register() -> None:
    """Register the task and the provider (again: a no-op)."""
    register_task("till", _till)
    register_task("till_no_oracle", _till_no_oracle)
    register_provider(
        "planted", _planted, usage="planted:NAME", description="test agent (tests/agent)"
    )

"""A tool world as an :class:`~calipers.types.Environment`: a database in plain dicts, tools,
a written policy, a simulated user and a perfect agent (the oracle), all read from one item.

An item's ``metadata`` holds its whole scenario (see docs/worlds.md):

- ``world``, ``version``, ``kind`` (``refund``, ``book``...), ``outcome`` (``change`` or
  ``refuse``: the right end is to change nothing), ``today``;
- ``initial`` and ``expected``: the database before and after a correct episode; ``compare``
  the tables whose contents must equal ``expected``;
- ``user``: ``opening`` (the first message), ``goal``, ``facts`` (what the user knows: key ->
  value), ``asks`` (key -> the words an agent asking for it would use), ``confirm_terms`` (words
  a confirmation question about the wanted change contains);
- ``required_info``: ``{"kind": "money"|"time"|"date"|"text", "value": ...}`` the agent's
  replies must state;
- ``plan``: the oracle's steps, ``{"tool": name, "arguments": {...}}`` or ``{"say": text}``;
- ``rules``: ``write_tools`` (tools that change the database), ``verify_tool`` and
  ``verify_guards`` (tools allowed only after a successful verification of the same user).

The world's tools do what they are asked when the data allows it (an unknown order is a
:class:`~calipers.types.ToolError`); they do not enforce the policy: following it is the
agent's job, and the graders check it.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from calipers._util.hashing import json_hash
from calipers.types import ChatMessage, ModelResponse, Sample, ToolCall, ToolSpec, Turn

__all__ = [
    "Handler",
    "User",
    "WorldDef",
    "WorldEnv",
    "oracle_reply",
    "scenario_sample",
    "tool_result",
]

# A tool: (database, arguments) -> a JSON-able result; may be async (the sandboxed calculator).
Handler = Callable[[dict[str, Any], dict[str, Any]], Any | Awaitable[Any]]


class User:
    """What a simulated user does: the next user message after the agent's reply, or None when
    the conversation is over. ``check`` is the simulator's own error record (an LLM user's
    messages checked against the scenario; None for the scripted user)."""

    async def next(self, messages: Sequence[ChatMessage], text: str) -> str | None:
        raise NotImplementedError

    def check(self) -> dict[str, Any] | None:
        return None


@dataclass(frozen=True)
class WorldDef:
    """One world: its name and version, the policy the agent is given, its tools and their
    handlers, and the item generator ``make(rng, sample_id) -> Sample``."""

    name: str
    version: str
    policy: str
    tools: tuple[ToolSpec, ...]
    handlers: Mapping[str, Handler]
    make: Callable[[Any, str], Sample]
    description: str = ""
    tags: tuple[str, ...] = field(default=())


def tool_result(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class WorldEnv:
    """One episode of a world for one item: a fresh copy of the item's database."""

    def __init__(self, world: WorldDef, sample: Sample, user: User) -> None:
        self.world = world
        self.sample = sample
        self.scenario = sample.metadata
        self.db: dict[str, Any] = copy.deepcopy(self.scenario["initial"])
        self.user = user
        self.tools = world.tools

    def opening(self) -> tuple[ChatMessage, ...]:
        system = f"{self.world.policy}\nToday is {self.scenario['today']}."
        return (
            ChatMessage(role="system", content=system),
            ChatMessage(role="user", content=self.scenario["user"]["opening"]),
        )

    async def call_tool(self, call: ToolCall) -> str:
        out = self.world.handlers[call.name](self.db, dict(call.arguments or {}))
        if inspect.isawaitable(out):
            out = await out
        return out if isinstance(out, str) else tool_result(out)

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        said = await self.user.next(messages, text)
        return None if said is None else Turn(user=said)

    def final_state(self) -> dict[str, Any]:
        state = copy.deepcopy(self.db)
        check = self.user.check()
        if check is not None:
            state["user_check"] = check
        return state

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        return oracle_reply(self.scenario["plan"], messages)


def oracle_reply(
    plan: Sequence[Mapping[str, Any]], messages: Sequence[ChatMessage]
) -> ModelResponse:
    """The next reply of a perfect agent following ``plan``: its steps are consumed in order,
    a tool step by each tool result in ``messages``, a ``say`` step by each reply the agent
    gave without a tool call; the first step not yet consumed is the answer (the last
    ``say`` again if the plan is used up)."""
    n_tool = sum(1 for m in messages if m.role == "tool")
    n_said = sum(1 for m in messages if m.role == "assistant" and not m.tool_calls)
    for i, step in enumerate(plan):
        if "tool" in step:
            if n_tool:
                n_tool -= 1
                continue
            call = ToolCall(id=f"oracle-{i}", name=step["tool"], arguments=dict(step["arguments"]))
            return ModelResponse(text="", tool_calls=(call,), finish_reason="tool_calls")
        if n_said:
            n_said -= 1
            continue
        return ModelResponse(text=step["say"], finish_reason="stop")
    last = next((s["say"] for s in reversed(plan) if "say" in s), "")
    return ModelResponse(text=last, finish_reason="stop")


def scenario_sample(
    sample_id: str,
    *,
    world: str,
    version: str,
    kind: str,
    outcome: str,
    today: str,
    initial: dict[str, Any],
    compare: Sequence[str],
    user: dict[str, Any],
    required_info: Sequence[dict[str, Any]],
    plan: Sequence[dict[str, Any]],
    rules: dict[str, Any],
    handlers: Mapping[str, Handler],
) -> Sample:
    """An item from its scenario. ``expected`` is computed by running the plan's write tools
    on a copy of ``initial`` with the world's own handlers, so the oracle's end state is the
    expected one by construction; a ``refuse`` scenario's plan writes nothing, so its expected
    state is its initial state."""
    expected = copy.deepcopy(initial)
    writes = set(rules["write_tools"])
    for step in plan:
        if step.get("tool") in writes:
            out = handlers[step["tool"]](expected, dict(step["arguments"]))
            assert not inspect.isawaitable(out), "write tools are synchronous"
    if outcome == "refuse":
        assert expected == initial, f"{world} {kind}: a refusal's plan changed the database"
    return Sample(
        id=sample_id,
        input=user["opening"],
        target=outcome,
        category=kind,
        fields={"scenario": json_hash([initial, user, plan], length=16)},
        metadata={
            "world": world,
            "version": version,
            "kind": kind,
            "outcome": outcome,
            "today": today,
            "initial": initial,
            "expected": expected,
            "compare": list(compare),
            "user": user,
            "required_info": list(required_info),
            "plan": list(plan),
            "rules": rules,
        },
    )

"""Episodes: samples answered over several model calls (conversations, agents).

A task whose items are conversations or tool worlds gives the runner an :class:`Environment`
per item. The runner's agent loop sends the environment's opening messages to the model, runs
the tools the model calls, asks the environment for the next user turn after each reply, and
stops when the environment has nothing more to say or a limit is reached. Every step is kept in
a :class:`Transcript`, which scorers read and the store keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from calipers.types._model import ChatMessage, ModelResponse, ToolCall, ToolSpec

__all__ = [
    "EPISODE_STOPS",
    "Environment",
    "EpisodeLimits",
    "EpisodeStop",
    "Step",
    "ToolError",
    "Transcript",
    "Turn",
]

EpisodeStop = Literal["done", "max_steps", "max_tokens", "max_seconds", "error"]
EPISODE_STOPS: tuple[EpisodeStop, ...] = ("done", "max_steps", "max_tokens", "max_seconds", "error")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class EpisodeLimits(_Frozen):
    """How far one episode may go. ``max_steps`` counts model calls; ``max_tokens`` the
    tokens the model read and wrote over the whole episode; ``max_seconds`` its wall time;
    ``tool_timeout_s`` one tool call (a tool that takes longer is stopped and the sample is
    stored as an error: a stuck tool is the harness's failure, never the model's pass or a
    hang)."""

    max_steps: int = Field(20, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_seconds: float | None = Field(None, gt=0)
    tool_timeout_s: float = Field(30.0, gt=0)


class Turn(_Frozen):
    """What the environment says after a model reply: the next user message. With
    ``assistant`` set, that text stands in the history in place of the model's reply (the
    golden-history arm: the model is judged on each turn given a correct past, not its own)."""

    user: str
    assistant: str | None = None


class ToolError(Exception):
    """A tool refused a call (unknown order, bad argument): the message goes back to the
    model as the tool's result, marked as an error. Any other exception from a tool is the
    harness's failure and ends the episode as an error."""


class Step(_Frozen):
    """One step of an episode, in order.

    - ``model``: one model call; ``text`` its reply, ``tool_calls`` what it asked for,
      ``n_messages`` how many messages it was sent.
    - ``tool``: one tool call; ``tool_call`` the call, ``text`` the result sent back,
      ``error`` set when the tool refused it (a :class:`ToolError`) or timed out.
    - ``user``: a user turn from the environment (``text``); ``replaced`` holds the model's
      reply that the golden history replaced, if any.
    """

    index: int
    kind: Literal["model", "tool", "user"]
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call: ToolCall | None = None
    n_messages: int | None = None
    replaced: str | None = None
    error: str | None = None
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached: bool = False


class Transcript(_Frozen):
    """A whole episode: its steps, the messages as they stood at the end, why it stopped,
    the environment's final state (a tool world's database), and the model's reply to each
    user turn in order (``replies[i]`` answers user turn ``i``; the last reply of an
    agent's turn, after its tool calls)."""

    steps: tuple[Step, ...] = ()
    messages: tuple[ChatMessage, ...] = ()
    replies: tuple[str, ...] = ()
    stopped: EpisodeStop = "done"
    error: str | None = None
    state: dict[str, Any] | None = None

    @property
    def final_text(self) -> str:
        return self.replies[-1] if self.replies else ""

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(s.tool_call for s in self.steps if s.tool_call is not None)

    @property
    def model_steps(self) -> int:
        return sum(1 for s in self.steps if s.kind == "model")

    def totals(self) -> tuple[float, int | None, int | None]:
        """Latency of the model calls, input and output tokens over the episode (None where a
        step did not report its count)."""
        models = [s for s in self.steps if s.kind == "model"]
        latency = sum(s.latency_s or 0.0 for s in models)
        tin = [s.input_tokens for s in models]
        tout = [s.output_tokens for s in models]
        return (
            latency,
            None if any(v is None for v in tin) else sum(v or 0 for v in tin),
            None if any(v is None for v in tout) else sum(v or 0 for v in tout),
        )


@runtime_checkable
class Environment(Protocol):
    """One item's world, fresh for each episode (it may hold state the tools change).

    ``tools`` are offered to the model on every call (empty for a plain conversation).
    ``opening`` is what the model is sent first: a system message if any, then the first user
    turn. ``call_tool`` runs one call and returns the result text (raise :class:`ToolError`
    for a call the tool refuses). ``reply`` hears the model's reply to the current user turn,
    given the messages so far (ending with that reply), and returns the next user turn, or
    None when the episode is over. ``final_state`` is what the graders compare (a world's
    database; None for conversations). ``oracle`` is the reply a perfect agent would give next
    given the messages so far (a reply with tool calls, or the final text); environments that
    cannot say return None, and the ``baseline:oracle`` agent then fails loudly."""

    @property
    def tools(self) -> tuple[ToolSpec, ...]: ...

    def opening(self) -> tuple[ChatMessage, ...]: ...

    async def call_tool(self, call: ToolCall) -> str: ...

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None: ...

    def final_state(self) -> dict[str, Any] | None: ...

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None: ...

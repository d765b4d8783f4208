"""Scripted conversations: the environment that plays a list of user turns to the model.

A conversation opens with its opening messages (a system message if any, then the first user
turn) and, after each model reply, says the next user turn, or nothing after the last. With the
golden history (``history="golden"``) each of the model's replies is replaced in the history by
the item's golden reply for that turn before the next turn is said, so turn i is judged given a
correct past (ability); with its own history (``"own"``) an early mistake stays in the history
and can propagate (error propagation). A turn may also be computed from the model's reply (a
challenge names a wrong answer that is not the model's own).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from calipers.types import ChatMessage, ModelResponse, ToolCall, ToolError, ToolSpec, Turn

__all__ = ["History", "NextTurn", "ScriptedConversation"]

History = Literal["own", "golden"]
# ``(index of the reply just made, its text) -> the next user turn``, or None to end
NextTurn = Callable[[int, str], Awaitable[str | None]]


class ScriptedConversation:
    """One item's conversation. ``opening`` is sent first; ``turns`` are the later user turns
    in order (text, or a :data:`NextTurn` that reads the model's reply); ``golden[i]`` is the
    reference reply to user turn ``i`` (0-based over all user turns, the opening's included),
    used in place of the model's reply when ``history="golden"``."""

    tools: tuple[ToolSpec, ...] = ()

    def __init__(
        self,
        opening: Sequence[ChatMessage],
        turns: Sequence[str | NextTurn] = (),
        *,
        golden: Sequence[str | None] = (),
        history: History = "own",
    ) -> None:
        if not opening or opening[-1].role != "user":
            raise ValueError("a conversation opens with a user turn")
        if history == "golden" and len(golden) < len(turns):
            raise ValueError(
                f"the golden history needs a reply for each of the first {len(turns)} turns"
            )
        self._opening = tuple(opening)
        self._turns = tuple(turns)
        self._golden = tuple(golden)
        self.history = history
        self.replied = 0

    def opening(self) -> tuple[ChatMessage, ...]:
        return self._opening

    async def call_tool(self, call: ToolCall) -> str:
        raise ToolError("this conversation has no tools")

    async def reply(self, messages: Sequence[ChatMessage], text: str) -> Turn | None:
        index = self.replied
        self.replied += 1
        if index >= len(self._turns):
            return None
        nxt = self._turns[index]
        user = nxt if isinstance(nxt, str) else await nxt(index, text)
        if user is None:
            return None
        golden = self._golden[index] if self.history == "golden" else None
        return Turn(user=user, assistant=golden)

    def final_state(self) -> dict[str, Any] | None:
        return None

    def oracle(self, messages: Sequence[ChatMessage]) -> ModelResponse | None:
        """The golden reply to the current turn, where the item has one."""
        n = sum(1 for m in messages if m.role == "assistant")
        if n < len(self._golden) and self._golden[n] is not None:
            return ModelResponse(text=str(self._golden[n]))
        return None

"""The agent loop: one episode of a conversation or a tool world, step by step, under limits.

The loop owns the message history. It sends the model the history and the environment's tools;
runs each tool call the model makes (each under its own time limit) and sends the results
back; when the model replies without calling a tool, it asks the environment for the next user
turn (which may replace the model's reply in the history: the golden-history arm). It stops when
the environment has nothing more to say, or at a limit (steps, tokens, wall time), and keeps
every step. A model call that fails, or a tool that raises anything but a ``ToolError`` or
runs past its limit, ends the episode as an error: the sample is stored as an error, not
scored as wrong and not as a pass.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from calipers.types import (
    ChatMessage,
    Environment,
    EpisodeLimits,
    EpisodeStop,
    ModelRequest,
    ModelResponse,
    Step,
    ToolCall,
    ToolError,
    Transcript,
)

__all__ = ["EpisodeFailed", "run_episode"]

Call = Callable[[ModelRequest], Awaitable[ModelResponse]]


class EpisodeFailed(Exception):
    """The episode could not go on for a reason that is not the model's answer (a model call
    failed, a tool crashed or hung). Carries the transcript up to that point."""

    def __init__(self, message: str, transcript: Transcript) -> None:
        super().__init__(message)
        self.transcript = transcript


def _tool_message(call: ToolCall, content: str) -> ChatMessage:
    return ChatMessage(role="tool", content=content, tool_call_id=call.id, name=call.name)


def _error_text(message: str) -> str:
    return json.dumps({"error": message})


async def run_episode(
    environment: Environment,
    first: ModelRequest,
    call: Call,
    limits: EpisodeLimits,
) -> Transcript:
    """Play one episode from its ``first`` request (the environment's opening messages and
    tools, as planned and stored). ``call`` sends one request to the model (through the
    response cache, with retries): the runner passes it so the loop knows neither."""
    steps: list[Step] = []
    messages = list(first.messages or ())
    replies: list[str] = []
    tools = first.tools
    params = first.params
    start = time.perf_counter()
    tokens = 0

    def transcript(stopped: EpisodeStop, error: str | None = None) -> Transcript:
        return Transcript(
            steps=tuple(steps),
            messages=tuple(messages),
            replies=tuple(replies),
            stopped=stopped,
            error=error,
            state=environment.final_state(),
        )

    def over_limit() -> EpisodeStop | None:
        if limits.max_seconds is not None and time.perf_counter() - start > limits.max_seconds:
            return "max_seconds"
        if limits.max_tokens is not None and tokens >= limits.max_tokens:
            return "max_tokens"
        if sum(1 for s in steps if s.kind == "model") >= limits.max_steps:
            return "max_steps"
        return None

    while True:
        if (stop := over_limit()) is not None:
            return transcript(stop)
        request = ModelRequest(messages=tuple(messages), params=params, tools=tools)
        try:
            response = await call(request)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise EpisodeFailed(f"model: {type(e).__name__}: {e}", transcript("error")) from e
        tokens += (response.input_tokens or 0) + (response.output_tokens or 0)
        steps.append(
            Step(
                index=len(steps),
                kind="model",
                text=response.text,
                tool_calls=response.tool_calls,
                n_messages=len(messages),
                latency_s=response.latency_s,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cached=response.cached,
            )
        )
        if response.tool_calls:
            messages.append(
                ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
            )
            for tc in response.tool_calls:
                steps.append(await _run_tool(environment, tc, limits, len(steps), transcript))
                messages.append(_tool_message(tc, steps[-1].text))
            continue
        messages.append(ChatMessage(role="assistant", content=response.text))
        replies.append(response.text)
        try:
            turn = await environment.reply(tuple(messages), response.text)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            raise EpisodeFailed(f"environment: {type(e).__name__}: {e}", transcript("error")) from e
        if turn is None:
            return transcript("done")
        replaced = None
        if turn.assistant is not None:  # golden history: the reference reply stands in
            replaced = response.text
            messages[-1] = ChatMessage(role="assistant", content=turn.assistant)
        steps.append(Step(index=len(steps), kind="user", text=turn.user, replaced=replaced))
        messages.append(ChatMessage(role="user", content=turn.user))


async def _run_tool(
    environment: Environment,
    tc: ToolCall,
    limits: EpisodeLimits,
    index: int,
    transcript: Callable[[EpisodeStop, str | None], Transcript],
) -> Step:
    """One tool call as a step. A call whose arguments did not parse, or that the tool
    refuses, is answered with an error the model can read; a tool that crashes or runs past
    ``limits.tool_timeout_s`` ends the episode (``EpisodeFailed``)."""
    if tc.arguments is None:
        why = tc.error or "the arguments are not a JSON object"
        return Step(index=index, kind="tool", tool_call=tc, text=_error_text(why), error=why)
    names = [t.name for t in environment.tools]
    if tc.name not in names:
        why = f"there is no tool named {tc.name!r} (tools: {', '.join(names) or 'none'})"
        return Step(index=index, kind="tool", tool_call=tc, text=_error_text(why), error=why)
    t0 = time.perf_counter()
    try:
        text = await asyncio.wait_for(environment.call_tool(tc), limits.tool_timeout_s)
        error = None
    except ToolError as e:
        text, error = _error_text(str(e)), str(e)
    except TimeoutError:
        why = f"tool {tc.name!r} did not answer within {limits.tool_timeout_s:g} s"
        failed = Step(
            index=index,
            kind="tool",
            tool_call=tc,
            error=why,
            latency_s=time.perf_counter() - t0,
        )
        raise EpisodeFailed(f"tool: {why}", _with_step(transcript("error", why), failed)) from None
    except asyncio.CancelledError:
        raise
    except Exception as e:
        why = f"tool {tc.name!r} crashed: {type(e).__name__}: {e}"
        failed = Step(index=index, kind="tool", tool_call=tc, error=why)
        raise EpisodeFailed(f"tool: {why}", _with_step(transcript("error", why), failed)) from e
    return Step(
        index=index,
        kind="tool",
        tool_call=tc,
        text=text,
        error=error,
        latency_s=time.perf_counter() - t0,
    )


def _with_step(t: Transcript, step: Step) -> Transcript:
    return t.model_copy(update={"steps": (*t.steps, step)})

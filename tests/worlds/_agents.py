"""Test-local agents for the worlds: the oracle (a provider that answers ``env.oracle``), a
do-nothing fake, scripted agents that follow the oracle's plan but skip steps, and a direct
episode driver (the runner's agent loop without the store)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from calipers.models import FakeModel, ModelProvider
from calipers.runner._episode import run_episode
from calipers.scorers import grade_episode
from calipers.tasks.worlds import LIMITS, make_env, oracle_reply
from calipers.types import (
    Environment,
    EpisodeLimits,
    ModelRequest,
    ModelResponse,
    Sample,
    Score,
    Transcript,
)

NOTHING = "I can't help with that."


class OracleProvider(FakeModel):
    """A provider whose per-episode player answers with the environment's oracle."""

    def __init__(self) -> None:
        super().__init__(name="oracle")

    def for_episode(self, environment: Environment) -> ModelProvider:
        return FakeModel(lambda req: _oracle_of(environment, req), name="oracle")


def _oracle_of(environment: Environment, request: ModelRequest) -> ModelResponse:
    out = environment.oracle(request.messages or ())
    assert out is not None
    return out


def do_nothing() -> FakeModel:
    return FakeModel(lambda req: NOTHING, name="nothing")


def plan_agent(plan: Sequence[dict[str, Any]]) -> Callable[[Any, ModelRequest], ModelResponse]:
    """An agent that follows ``plan`` (an edited oracle plan)."""
    return lambda env, req: oracle_reply(plan, req.messages or ())


def without(plan: Sequence[dict[str, Any]], drop: Callable[[dict[str, Any]], bool]) -> list[Any]:
    return [s for s in plan if not drop(s)]


async def _play(
    world: str,
    sample: Sample,
    agent: Callable[[Any, ModelRequest], ModelResponse],
    limits: EpisodeLimits,
    user: Any,
) -> Transcript:
    env = make_env(world, sample, user)
    first = ModelRequest(messages=env.opening(), tools=env.tools)

    async def call(req: ModelRequest) -> ModelResponse:
        return agent(env, req)

    return await run_episode(env, first, call, limits)


def play(
    world: str,
    sample: Sample,
    agent: Callable[[Any, ModelRequest], ModelResponse],
    limits: EpisodeLimits = LIMITS,
    user: Any = None,
) -> tuple[Score, Transcript]:
    """One episode of ``sample`` with ``agent`` (``(env, request) -> response``), graded."""
    t = asyncio.run(_play(world, sample, agent, limits, user))
    return grade_episode(sample, t), t

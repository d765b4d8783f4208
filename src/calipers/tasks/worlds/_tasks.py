"""The world tasks: ``world_orders``, ``world_calendar``, ``world_accounts``.

Each item is a fresh seeded scenario (``dynamic``: item ``i`` of a seed is the same for any
``n``); each episode plays it against a fresh copy of its database with a simulated user: the
scripted one by default, or a model (``world_task(name, user="fake")`` or any model spec),
whose messages are then checked against the scenario and its error rate reported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from calipers.scorers import build_scorer
from calipers.tasks._registry import register_task
from calipers.tasks._task import LoadContext, Task
from calipers.tasks.dynamic import generate
from calipers.tasks.worlds._accounts import ACCOUNTS
from calipers.tasks.worlds._calendar import CALENDAR
from calipers.tasks.worlds._env import User, WorldDef, WorldEnv
from calipers.tasks.worlds._orders import ORDERS
from calipers.tasks.worlds._user import MAX_TURNS, ModelUser, ScriptedUser
from calipers.types import EpisodeLimits, GenerateParams, Sample

__all__ = ["DEFAULT_N", "LIMITS", "WORLDS", "make_env", "register", "world_samples", "world_task"]

WORLDS: dict[str, WorldDef] = {w.name: w for w in (ORDERS, CALENDAR, ACCOUNTS)}
DEFAULT_N = 50
LIMITS = EpisodeLimits(max_steps=30, tool_timeout_s=30.0)


def _world(name: str) -> WorldDef:
    if name not in WORLDS:
        raise KeyError(f"no world {name!r}; worlds: {', '.join(WORLDS)}")
    return WORLDS[name]


@functools.lru_cache(maxsize=16)
def _items(name: str, seed: int, n: int) -> tuple[Sample, ...]:
    return tuple(generate(f"world_{name}", _world(name).make, seed, n))


def world_samples(name: str, seed: int = 0, n: int = DEFAULT_N) -> list[Sample]:
    """The first ``n`` scenarios of world ``name`` for ``seed`` (ids ``"<seed>-<i>"``)."""
    return list(_items(name, seed, n))


def make_env(name: str, sample: Sample, user: Any = None, max_turns: int = MAX_TURNS) -> WorldEnv:
    """A fresh episode of ``sample``: its world with the scripted user, or with ``user`` (a
    model provider) playing the user."""
    sim: User = (
        ScriptedUser(sample.metadata["user"], max_turns)
        if user is None
        else ModelUser(sample.metadata["user"], user, max_turns)
    )
    return WorldEnv(_world(name), sample, sim)


def _user_factory(user: Any) -> Callable[[], Any]:
    """The user-model provider, resolved once on first use (a spec string or a provider)."""
    if user is None or not isinstance(user, str):
        return lambda: user

    @functools.cache
    def provider() -> Any:
        from calipers.models import resolve_model

        return resolve_model(user)

    return provider


def world_task(
    name: str, *, user: Any = None, limits: EpisodeLimits = LIMITS, default_n: int = DEFAULT_N
) -> Task:
    """The task of world ``name``. ``user``: None for the scripted user, else a model spec or
    provider that plays the user (its errors measured: ``user_error_rate``)."""
    world = _world(name)
    provider = _user_factory(user)
    label = (
        "scripted"
        if user is None
        else user
        if isinstance(user, str)
        else f"{user.provider_name}:{user.identity().name}"  # as the runner names a model
    )

    def load(ctx: LoadContext) -> list[Sample]:
        return world_samples(name, ctx.seed, default_n if ctx.n is None else ctx.n)

    return Task(
        name=f"world_{name}",
        version=world.version,
        description=world.description,
        kind="episode",
        load=load,
        scorers=(build_scorer("agent_outcome"),),
        params=GenerateParams(max_tokens=256, temperature=0.0),
        environment=lambda s: make_env(name, s, provider()),
        limits=limits,
        episode_card={"world": name, "version": world.version, "user": label},
        default_n=default_n,
        dynamic=True,
        source="calipers (generated)",
        tags=("agent", "world", "dynamic"),
    )


def register() -> None:
    """Register the world tasks (idempotent)."""
    for name in WORLDS:
        register_task(f"world_{name}", functools.partial(world_task, name))

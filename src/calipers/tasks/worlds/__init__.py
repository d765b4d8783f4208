"""Seeded tool worlds (orders and refunds, calendar, accounts): a database in plain dicts,
tools, a written policy, a simulated user and an oracle, graded by ``agent_outcome`` on end
state, required information and procedure (docs/worlds.md). Names load on first use."""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports

if TYPE_CHECKING:
    from calipers.tasks.worlds._calc import calculate, calculator_program
    from calipers.tasks.worlds._env import User, WorldDef, WorldEnv, oracle_reply
    from calipers.tasks.worlds._tasks import (
        DEFAULT_N,
        LIMITS,
        WORLDS,
        make_env,
        world_samples,
        world_task,
    )
    from calipers.tasks.worlds._user import ModelUser, ScriptedUser, check_user_message

__all__ = [
    "DEFAULT_N",
    "LIMITS",
    "WORLDS",
    "ModelUser",
    "ScriptedUser",
    "User",
    "WorldDef",
    "WorldEnv",
    "calculate",
    "calculator_program",
    "check_user_message",
    "make_env",
    "oracle_reply",
    "world_samples",
    "world_task",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DEFAULT_N": "_tasks",
        "LIMITS": "_tasks",
        "WORLDS": "_tasks",
        "ModelUser": "_user",
        "ScriptedUser": "_user",
        "User": "_env",
        "WorldDef": "_env",
        "WorldEnv": "_env",
        "calculate": "_calc",
        "calculator_program": "_calc",
        "check_user_message": "_user",
        "make_env": "_tasks",
        "oracle_reply": "_env",
        "world_samples": "_tasks",
        "world_task": "_tasks",
    },
)

"""The built-in dynamic tasks and their suite. calipers' own entry points (group
``calipers.tasks`` in pyproject.toml) name this ``register`` for each of them, and each
benchmark module's ``register`` for its tasks, so built-ins load the way plugins do, and
only when a name asks for them."""

from __future__ import annotations

from calipers.tasks._registry import register_suite, register_task
from calipers.tasks.dynamic import (
    SUITE,
    arithmetic_task,
    dates_mc_task,
    dates_task,
    word_problems_task,
)

__all__ = ["register"]


def register() -> None:
    register_task("dyn_word_problems", word_problems_task)
    register_task("dyn_arithmetic", arithmetic_task)
    register_task("dyn_dates", dates_task)
    register_task("dyn_dates_mc", dates_mc_task, formulations=("cloze", "letter", "generate"))
    register_suite("dynamic", SUITE)

"""Task names for conversations: ``converse:PROBE[,key=value...]:TASK`` (a probe of any
single-turn task, e.g. ``converse:challenge:arc_easy``, ``converse:reask,fillers=4:gsm8k``,
``converse:recollection,distances=1/5:dyn_word_problems``) and ``converse:own:FILE`` /
``converse:golden:FILE`` (a conversation task file under the other history arm). Registered
as a task prefix through the ``calipers.tasks`` entry point ``converse``, so a stored run of a
probe resumes by its name."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calipers.errors import ConfigError
from calipers.tasks._registry import register_resolver, resolve_task
from calipers.tasks._task import Task
from calipers.tasks.conversation._probes import PROBES, probe_task
from calipers.tasks.conversation._task import HISTORIES, with_history

__all__ = ["PREFIX", "register", "resolve_converse"]

PREFIX = "converse"
_HINT = (
    "Name a probe as converse:PROBE:TASK (probes: "
    + ", ".join(PROBES)
    + "), or a history arm as converse:own:FILE / converse:golden:FILE."
)


def _options(parts: list[str], spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        key, sep, value = p.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{spec!r}: option {p!r} is not key=value.", hint=_HINT)
        v = value.strip()
        out[key.strip()] = v.split("/") if "/" in v or key.strip() == "distances" else v
    return out


def resolve_converse(spec: str, formulation: str | None) -> list[Task]:
    _prefix, _sep, rest = spec.partition(":")
    head, sep, base = rest.partition(":")
    if not sep or not base:
        raise ConfigError(f"{spec!r} names no task after the probe.", hint=_HINT)
    probe, *opts = head.split(",")
    if probe in HISTORIES:
        if opts:
            raise ConfigError(f"{spec!r}: a history arm takes no options.", hint=_HINT)
        return [with_history(t, probe) for t in resolve_task(base, formulation)]
    if probe not in PROBES:
        raise ConfigError(f"{spec!r}: unknown probe {probe!r}.", hint=_HINT)
    options = _options(opts, spec)
    bases = resolve_task(base, formulation)
    made = [probe_task(t, probe, **options) for t in bases]
    if len(made) == 1 and made[0] is not bases[0]:  # a probe, or a multiple-choice control
        # the name a stored run resolves again: exactly what the user wrote
        return [replace(made[0], name=spec)]
    return made


def register() -> None:
    register_resolver(PREFIX, resolve_converse)

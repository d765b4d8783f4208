"""Task registry: built-ins and plugins register here; names resolve with "did you mean"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from calipers._util.plugins import Registrations
from calipers.errors import UnknownNameError
from calipers.tasks._task import Task

__all__ = ["get_task", "list_tasks", "register_task", "resolve_task"]

_TASKS: dict[str, Callable[[], Task]] = {}
_SUITES: dict[str, tuple[str, ...]] = {}


def register_task(name: str, factory: Callable[[], Task]) -> None:
    _TASKS[name] = factory


def register_suite(name: str, tasks: tuple[str, ...]) -> None:
    _SUITES[name] = tasks


def _register_builtins() -> None:
    from calipers.tasks import _builtins

    _builtins.register()


# Third-party tasks: entry points in group ``calipers.tasks``, each a ``register()``.
_load = Registrations("calipers.tasks", _register_builtins).ensure


def list_tasks() -> dict[str, Callable[[], Task]]:
    _load()
    return dict(sorted(_TASKS.items()))


def list_suites() -> dict[str, tuple[str, ...]]:
    _load()
    return dict(sorted(_SUITES.items()))


def get_task(name: str) -> Task:
    _load()
    if name not in _TASKS:
        raise UnknownNameError(
            "task", name, [*_TASKS, *_SUITES],
            hint="`calipers tasks` lists them; a path to a .yaml/.json task file also works.",
        )
    return _TASKS[name]()


def resolve_task(name_or_path: str) -> list[Task]:
    """A registered task, a suite of tasks, or a task spec file path."""
    _load()
    if name_or_path in _SUITES:
        return [get_task(t) for t in _SUITES[name_or_path]]
    p = Path(name_or_path)
    if p.suffix.lower() in {".yaml", ".yml", ".json"} or (p.exists() and p.is_file()):
        from calipers.tasks._spec import load_task_spec

        return [load_task_spec(p)]
    return [get_task(name_or_path)]

"""Task registry: built-ins and plugins register here; names resolve with "did you mean"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from calipers._util.plugins import Registrations
from calipers.errors import ConfigError, UnknownNameError
from calipers.tasks._task import Task

__all__ = [
    "formulations",
    "generative_formulation",
    "get_task",
    "list_suites",
    "list_tasks",
    "register_suite",
    "register_task",
    "resolve_task",
]

_TASKS: dict[str, Callable[..., Task]] = {}
_FORMULATIONS: dict[str, tuple[str, ...]] = {}
_SUITES: dict[str, tuple[str, ...]] = {}


def register_task(
    name: str, factory: Callable[..., Task], *, formulations: tuple[str, ...] = ()
) -> None:
    """Register a task. A task with several ``formulations`` (the first is its default, the
    one its authors and published figures use) has a factory taking ``formulation=``."""
    _TASKS[name] = factory
    if formulations:
        _FORMULATIONS[name] = formulations


def formulations(name: str) -> tuple[str, ...]:
    """The formulations a task offers (empty: only one)."""
    _load()
    return _FORMULATIONS.get(name, ())


def generative_formulation(name: str) -> str | None:
    """The first of a task's formulations that is answered by generation (the option letter
    read from a reply, say), for models that cannot score log-likelihoods; None when the task
    offers none."""
    return next((f for f in formulations(name) if get_task(name, f).kind == "generate"), None)


def register_suite(name: str, tasks: tuple[str, ...]) -> None:
    _SUITES[name] = tasks


def _register_builtins() -> None:
    from calipers.tasks import _builtins

    _builtins.register()


# Third-party tasks: entry points in group ``calipers.tasks``, each a ``register()``.
_load = Registrations("calipers.tasks", _register_builtins).ensure


def list_tasks() -> dict[str, Callable[..., Task]]:
    _load()
    return dict(sorted(_TASKS.items()))


def list_suites() -> dict[str, tuple[str, ...]]:
    _load()
    return dict(sorted(_SUITES.items()))


def get_task(name: str, formulation: str | None = None) -> Task:
    _load()
    if name not in _TASKS:
        raise UnknownNameError(
            "task",
            name,
            [*_TASKS, *_SUITES],
            hint="`calipers tasks` lists them; a path to a .yaml/.json task file also works.",
        )
    offered = _FORMULATIONS.get(name, ())
    if not offered:
        if formulation is not None:
            raise ConfigError(f"Task {name!r} has a single formulation; drop --formulation.")
        return _TASKS[name]()
    if formulation is not None and formulation not in offered:
        raise ConfigError(
            f"Task {name!r} has no formulation {formulation!r}.",
            hint=f"Its formulations: {', '.join(offered)} (default {offered[0]}).",
        )
    return _TASKS[name](formulation=formulation or offered[0])


def resolve_task(name_or_path: str, formulation: str | None = None) -> list[Task]:
    """A registered task, a suite of tasks, or a task spec file path. In a suite, a
    formulation applies to the tasks that offer it; the others keep their only one."""
    _load()
    if name_or_path.startswith("suite:"):  # built from production logs (calipers suite build)
        from calipers.suites import suite_task  # lazily: suites build on tasks

        if formulation is not None:
            raise ConfigError("--formulation applies to built-in tasks, not suites from logs.")
        return [suite_task(name_or_path)]
    if name_or_path in _SUITES:
        names = _SUITES[name_or_path]
        if formulation is not None and not any(formulation in formulations(t) for t in names):
            raise ConfigError(f"No task in suite {name_or_path!r} has formulation {formulation!r}.")
        return [get_task(t, formulation if formulation in formulations(t) else None) for t in names]
    p = Path(name_or_path)
    if p.suffix.lower() in {".yaml", ".yml", ".json"} or (p.exists() and p.is_file()):
        from calipers.tasks._spec import load_task_spec

        if formulation is not None:
            raise ConfigError("--formulation applies to built-in tasks, not task files.")
        return [load_task_spec(p)]
    return [get_task(name_or_path, formulation)]

"""Task registry: tasks, suites of tasks and ``PREFIX:`` resolvers, fed by entry point group
``calipers.tasks`` (built-ins and plugins alike); names resolve with "did you mean"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from calipers._util.registry import Plugins, Registry
from calipers.errors import ConfigError, UnknownNameError
from calipers.tasks._task import Task

__all__ = [
    "Resolver",
    "ResolverInfo",
    "SuiteInfo",
    "TaskInfo",
    "formulations",
    "generative_formulation",
    "get_task",
    "list_suites",
    "list_tasks",
    "register_resolver",
    "register_suite",
    "register_task",
    "resolve_task",
]

# ``resolve(spec, formulation)``: the tasks that ``PREFIX:REST`` names (``spec`` whole).
Resolver = Callable[[str, str | None], list[Task]]


@dataclass(frozen=True)
class TaskInfo:
    name: str
    factory: Callable[..., Task]
    formulations: tuple[str, ...] = ()  # the first is the default


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class ResolverInfo:
    prefix: str
    resolve: Resolver


_HINT = "`calipers tasks` lists them; a path to a .yaml/.json task file also works."
_plugins = Plugins("calipers.tasks")
_tasks = Registry("task", _plugins, TaskInfo, hint=_HINT)
_suites = Registry("suite", _plugins, SuiteInfo, hint=_HINT)
_resolvers = Registry("task prefix", _plugins, ResolverInfo)
_TASKS = _tasks._items  # tests take out a task they registered


def register_task(
    name: str, factory: Callable[..., Task], *, formulations: tuple[str, ...] = ()
) -> None:
    """Register a task. A task with several ``formulations`` (the first is its default, the
    one its authors and published figures use) has a factory taking ``formulation=``."""
    _tasks.add(name, TaskInfo(name, factory, formulations))


def register_suite(name: str, tasks: tuple[str, ...]) -> None:
    _suites.add(name, SuiteInfo(name, tuple(tasks)))


def register_resolver(prefix: str, resolve: Resolver) -> None:
    """Names ``PREFIX:REST`` resolve through ``resolve`` (the suites package adds ``suite:``)."""
    _resolvers.add(prefix, ResolverInfo(prefix, resolve))


def formulations(name: str) -> tuple[str, ...]:
    """The formulations a task offers (empty: only one, or no such task)."""
    info = _tasks.find(name)
    return info.formulations if info else ()


def generative_formulation(name: str) -> str | None:
    """The first of a task's formulations that is answered by generation (the option letter
    read from a reply, say), for models that cannot score log-likelihoods; None when the task
    offers none."""
    return next((f for f in formulations(name) if get_task(name, f).kind == "generate"), None)


def list_tasks() -> dict[str, Callable[..., Task]]:
    return {n: info.factory for n, info in _tasks.items().items()}


def list_suites() -> dict[str, tuple[str, ...]]:
    return {n: info.tasks for n, info in _suites.items().items()}


def get_task(name: str, formulation: str | None = None) -> Task:
    info = _tasks.find(name)
    if info is None:
        raise UnknownNameError("task", name, [*_tasks.names(), *_suites.names()], hint=_HINT)
    offered = info.formulations
    if not offered:
        if formulation is not None:
            raise ConfigError(f"Task {name!r} has a single formulation; drop --formulation.")
        return info.factory()
    if formulation is not None and formulation not in offered:
        raise ConfigError(
            f"Task {name!r} has no formulation {formulation!r}.",
            hint=f"Its formulations: {', '.join(offered)} (default {offered[0]}).",
        )
    return info.factory(formulation=formulation or offered[0])


def _suite(name: str, formulation: str | None) -> list[Task]:
    names = _suites.get(name).tasks
    if formulation is not None and not any(formulation in formulations(t) for t in names):
        raise ConfigError(f"No task in suite {name!r} has formulation {formulation!r}.")
    return [get_task(t, formulation if formulation in formulations(t) else None) for t in names]


def resolve_task(name_or_path: str, formulation: str | None = None) -> list[Task]:
    """A registered task, a suite of tasks, ``PREFIX:REST`` for a registered resolver
    (``suite:NAME``), or a task spec file path. In a suite, a formulation applies to the
    tasks that offer it; the others keep their only one. Only the entry points these names
    need are loaded (the default suite does not import the public benchmarks)."""
    prefix, sep, _rest = name_or_path.partition(":")
    resolver = _resolvers.find(prefix) if sep else None
    if resolver is not None:
        return resolver.resolve(name_or_path, formulation)
    if _suites.peek(name_or_path) is not None:
        return _suite(name_or_path, formulation)
    p = Path(name_or_path)
    if p.suffix.lower() in {".yaml", ".yml", ".json"} or (p.exists() and p.is_file()):
        from calipers.tasks._spec import load_task_spec

        if formulation is not None:
            raise ConfigError("--formulation applies to built-in tasks, not task files.")
        return [load_task_spec(p)]
    if _tasks.find(name_or_path) is None and _suites.find(name_or_path) is not None:
        return _suite(name_or_path, formulation)  # a plugin's suite, named unlike its entry
    return [get_task(name_or_path, formulation)]

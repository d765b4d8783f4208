"""One registry for every extension kind, fed lazily by entry points (see docs/plugins.md).

A :class:`Registry` maps names to typed info objects. Registering a different object under a
taken name raises; registering the same one again does nothing; an unknown name raises
:class:`~calipers.errors.UnknownNameError` with "did you mean". Nothing is registered at
import: the first lookup loads the entry points of the registry's group (built-ins are
declared in calipers' own pyproject, so they load the way a third party's plugin does).

Lookups stay cheap: a name loads the entry point *named as it* first, and only a name still
unknown (or listing everything) loads the whole group. An entry point's object is either

- a callable ``register() -> None``, called once, that registers through the package's
  public functions (``register_task``, ``register_provider``, ...);
- a module, whose import registers (``@scorer`` decorators);
- an info object of one of the group's registries (``ProviderInfo``), registered under the
  entry point's name.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar, cast

from calipers.errors import ConfigError, UnknownNameError

__all__ = ["Plugins", "Registry"]

T = TypeVar("T")

# register() callables already called, by "module:attr": one shared by several entry points
# (one per name it registers) runs once. And what failed, so a retry says the same.
_CALLED: set[str] = set()
_FAILED: dict[str, BaseException] = {}
_ORIGIN: list[str] = []  # the plugin whose entry point is loading now (innermost last)


@functools.cache
def _all_entry_points() -> EntryPoints:
    """Read once: every group's lookup would otherwise read every installed distribution."""
    return cast(EntryPoints, entry_points())  # 3.11: SelectableGroups, with the same select()


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else None
    return f"plugin {ep.name!r} ({ep.value}{', from ' + dist if dist else ''})"


class Plugins:
    """The entry points of one group, each loaded at most once."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._registries: list[Registry[Any]] = []
        self._eps: list[EntryPoint] | None = None
        self._done: set[tuple[str, str]] = set()

    def _entry_points(self) -> list[EntryPoint]:
        if self._eps is None:
            found = _all_entry_points().select(group=self.group)
            self._eps = sorted(found, key=lambda e: (e.name, e.value))
        return self._eps

    def names(self) -> list[str]:
        return sorted({ep.name for ep in self._entry_points()})

    def load(self, name: str) -> bool:
        """Load the entry points called ``name``; False when there is none."""
        found = [ep for ep in self._entry_points() if ep.name == name]
        for ep in found:
            self._load(ep)
        return bool(found)

    def load_all(self) -> None:
        for ep in self._entry_points():
            self._load(ep)

    def _load(self, ep: EntryPoint) -> None:
        if (ep.name, ep.value) in self._done:
            return
        self._done.add((ep.name, ep.value))
        if ep.value in _FAILED:
            self._done.discard((ep.name, ep.value))
            raise self._failed(ep, _FAILED[ep.value])
        with _loading(_origin(ep)):
            try:
                obj = ep.load()
                if isinstance(obj, ModuleType):
                    return  # importing it registered what it has
                if callable(obj):
                    if ep.value not in _CALLED:
                        _CALLED.add(ep.value)
                        obj()
                    return
            except ConfigError:
                self._done.discard((ep.name, ep.value))
                raise  # a collision or a bad name: its message names the plugin already
            except Exception as e:
                self._done.discard((ep.name, ep.value))
                _FAILED[ep.value] = e
                raise self._failed(ep, e) from e
            self._add(ep, obj)

    def _add(self, ep: EntryPoint, obj: object) -> None:
        own = getattr(obj, "name", ep.name)
        for registry in self._registries:
            if registry.accepts(obj) and own == ep.name:
                registry.add(ep.name, obj)
                return
        raise ConfigError(
            f"Entry point {ep.name!r} ({ep.value}) in group {self.group!r} names neither a "
            "register() callable, a module, nor an info object of this group named as the "
            "entry point.",
            hint="See docs/plugins.md for what an entry point may name.",
        )

    def _failed(self, ep: EntryPoint, e: BaseException) -> ConfigError:
        return ConfigError(
            f"The {_origin(ep)} in group {self.group!r} failed to load: {type(e).__name__}: {e}",
            hint="Reinstall or upgrade the package that provides it, or uninstall it.",
        )


@contextmanager
def _loading(origin: str) -> Iterator[None]:
    _ORIGIN.append(origin)
    try:
        yield
    finally:
        _ORIGIN.pop()


class Registry(Generic[T]):
    """Names to ``T`` for one extension kind (``kind`` is how errors name it: "task")."""

    def __init__(
        self,
        kind: str,
        plugins: Plugins,
        info_type: type[T] | None = None,
        *,
        hint: str | None = None,
    ) -> None:
        self.kind = kind
        self._plugins = plugins
        self._info_type = info_type
        self._hint = hint
        self._items: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        plugins._registries.append(self)

    def accepts(self, obj: object) -> bool:
        return self._info_type is not None and isinstance(obj, self._info_type)

    def add(self, name: str, item: T) -> None:
        """Register ``item`` as ``name``; the same item again is a no-op, another one raises."""
        if name in self._items:
            if self._items[name] is item or self._items[name] == item:
                return
            raise ConfigError(
                f"The {self.kind} {name!r} is registered twice: by {self._origins[name]} and "
                f"by {_ORIGIN[-1] if _ORIGIN else 'code'}.",
                hint="Rename one of them, or uninstall the plugin that should not provide it.",
            )
        self._items[name] = item
        self._origins[name] = _ORIGIN[-1] if _ORIGIN else "code"

    def remove(self, name: str) -> T | None:
        """Take ``name`` out (tests that register a temporary item)."""
        self._origins.pop(name, None)
        return self._items.pop(name, None)

    def find(self, name: str) -> T | None:
        """The item called ``name``, loading the entry point of that name first, then (if it
        is still unknown) every entry point of the group; None when there is none."""
        if name not in self._items:
            self._plugins.load(name)
        if name not in self._items:
            self._plugins.load_all()
        return self._items.get(name)

    def get(self, name: str) -> T:
        """Like :meth:`find`, but an unknown name raises UnknownNameError (did you mean)."""
        item = self.find(name)
        if item is None:
            raise UnknownNameError(self.kind, name, self.names(), hint=self._hint)
        return item

    def __contains__(self, name: str) -> bool:
        return self.find(name) is not None

    def peek(self, name: str) -> T | None:
        """The item called ``name`` if its entry point (of the same name) is or was loaded;
        never loads the whole group (for names that are often not this kind's)."""
        if name not in self._items:
            self._plugins.load(name)
        return self._items.get(name)

    def items(self) -> dict[str, T]:
        """Everything, sorted by name (loads every entry point of the group)."""
        self._plugins.load_all()
        return dict(sorted(self._items.items()))

    def names(self) -> list[str]:
        return list(self.items())

"""The one registry: collisions, did-you-mean, and entry points loaded only when needed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import EntryPoint, EntryPoints
from pathlib import Path

import pytest

from calipers._util import registry as registry_module
from calipers._util.registry import Plugins, Registry
from calipers.errors import ConfigError, UnknownNameError


@dataclass(frozen=True)
class Info:
    name: str
    value: int


# What the test plugin modules register into, and the register() calls they made.
REG: Registry[Info] | None = None
CALLS: list[str] = []


@pytest.fixture
def plugin_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path for test plugin modules (forgotten again after the test)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("regtest_"):
            del sys.modules[name]


def with_entry_points(monkeypatch: pytest.MonkeyPatch, group: str, *pairs: str) -> Plugins:
    eps = EntryPoints(EntryPoint(n, v, group) for n, v in (p.split("=") for p in pairs))
    monkeypatch.setattr(registry_module, "_all_entry_points", lambda: eps)
    return Plugins(group)


def module(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.py").write_text(text, encoding="utf-8")


def test_the_same_item_again_is_a_no_op_and_another_one_raises() -> None:
    reg: Registry[Info] = Registry("widget", Plugins("calipers.regtest.none"))
    a = Info("a", 1)
    reg.add("a", a)
    reg.add("a", Info("a", 1))  # equal: the same registration again
    with pytest.raises(ConfigError, match=r"The widget 'a' is registered twice: by code and by"):
        reg.add("a", Info("a", 2))
    assert reg.get("a") is a


def test_an_unknown_name_says_what_it_might_have_meant() -> None:
    reg: Registry[Info] = Registry("widget", Plugins("calipers.regtest.none"))
    for name in ("alpha", "beta", "gamma"):
        reg.add(name, Info(name, 0))
    with pytest.raises(UnknownNameError) as e:
        reg.get("alpah")
    assert str(e.value).splitlines() == [
        "Unknown widget 'alpah'. Did you mean 'alpha'?",
        "Known widgets: alpha, beta, gamma.",
    ]


def test_a_lookup_loads_only_the_entry_point_named_as_it(
    plugin_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one", "two"):
        module(
            plugin_modules,
            f"regtest_{name}",
            "import tests.util.test_registry as t\n"
            f"def register():\n    t.CALLS.append({name!r})\n"
            f"    t.REG.add({name!r}, t.Info({name!r}, 1))\n",
        )
    plugins = with_entry_points(
        monkeypatch,
        "calipers.regtest",
        "one=regtest_one:register",
        "two=regtest_two:register",
        "uno=regtest_one:register",  # a second name for the same register(): called once
    )
    reg: Registry[Info] = Registry("widget", plugins)
    calls: list[str] = []
    monkeypatch.setattr(sys.modules[__name__], "REG", reg)
    monkeypatch.setattr(sys.modules[__name__], "CALLS", calls)
    assert reg.get("one") == Info("one", 1)
    assert "regtest_two" not in sys.modules
    assert reg.names() == ["one", "two"]
    assert calls == ["one", "two"]


def test_a_name_no_entry_point_is_named_after_loads_them_all(
    plugin_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module(plugin_modules, "regtest_all", "import regtest_all_target\n")
    module(plugin_modules, "regtest_all_target", "")
    plugins = with_entry_points(monkeypatch, "calipers.regtest", "pkg=regtest_all")
    reg: Registry[Info] = Registry("widget", plugins)
    assert reg.find("anything") is None
    assert "regtest_all_target" in sys.modules


def test_an_entry_point_may_name_the_info_object_itself(
    plugin_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module(
        plugin_modules,
        "regtest_info",
        "from tests.util.test_registry import Info\nGOOD = Info('good', 7)\nBAD = Info('x', 0)\n",
    )
    plugins = with_entry_points(
        monkeypatch, "calipers.regtest", "good=regtest_info:GOOD", "bad=regtest_info:BAD"
    )
    reg: Registry[Info] = Registry("widget", plugins, Info)
    assert reg.get("good") == Info("good", 7)
    with pytest.raises(ConfigError, match=r"Entry point 'bad' \(regtest_info:BAD\)"):
        reg.get("bad")


def test_a_broken_plugin_is_named_every_time_it_is_needed(
    plugin_modules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module(plugin_modules, "regtest_broken", "def register():\n    raise RuntimeError('boom')\n")
    plugins = with_entry_points(
        monkeypatch,
        "calipers.regtest",
        "broken=regtest_broken:register",
        "gone=regtest_missing_module:register",
    )
    reg: Registry[Info] = Registry("widget", plugins)
    for _ in range(2):
        with pytest.raises(ConfigError) as e:
            reg.get("broken")
        assert str(e.value).splitlines()[0] == (
            "The plugin 'broken' (regtest_broken:register) in group 'calipers.regtest' "
            "failed to load: RuntimeError: boom"
        )
    with pytest.raises(ConfigError, match="No module named 'regtest_missing_module'"):
        reg.get("gone")

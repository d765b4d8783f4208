"""The one bounded YAML loader: limits on size, depth and alias expansion, each failure a
ConfigError that names the file and line; every YAML file calipers reads goes through it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from calipers._util.redact import RedactConfig
from calipers._util.yamlloc import (
    MAX_YAML_CHARS,
    MAX_YAML_DEPTH,
    YamlError,
    load_yaml,
    yaml_line,
)
from calipers.cards import load_card
from calipers.errors import ConfigError
from calipers.selection import load_selection


def laughs(levels: int) -> str:
    text = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for i in range(1, levels):
        text += f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n"
    return text


def test_ordinary_yaml_loads_as_safe_load_does() -> None:
    text = "name: t\nlist: [1, 2.5, yes, null, {k: v}]\nanchor: &x {a: 1}\ncopy: *x\n"
    assert load_yaml(text, "t.yaml") == yaml.safe_load(text)
    assert load_yaml("", "t.yaml") is None
    assert load_yaml(laughs(5), "t.yaml") == yaml.safe_load(laughs(5))  # 4e5: within limits


def test_billion_laughs_is_refused_at_once() -> None:
    start = time.monotonic()
    with pytest.raises(YamlError) as info:
        load_yaml(laughs(10), "bomb.yaml")
    assert time.monotonic() - start < 2
    assert info.value.message == "bomb.yaml:7: YAML aliases expand it past 10,000,000 characters."
    assert info.value.hint and "aliases" in info.value.hint
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &a [1, *a]\n", "t.yaml:1: a YAML alias refers to a value that contains it"),
        (
            "k: " + "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1) + "\n",
            f"t.yaml:1: YAML nested deeper than {MAX_YAML_DEPTH} levels",
        ),
        ("k: " + "[" * 5000 + "]" * 5000 + "\n", f"nested deeper than {MAX_YAML_DEPTH} levels"),
        ("x: 1\n---\ny: 2\n", "t.yaml:2: not valid YAML (but found another document)"),
        ("a: [1\n", "t.yaml:2: not valid YAML"),
    ],
)
def test_limits_and_syntax_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(YamlError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_yaml(text, "t.yaml")


def test_size_limit() -> None:
    with pytest.raises(YamlError, match=r"^t\.yaml: 5,000,001 characters of YAML is over"):
        load_yaml("#" * (MAX_YAML_CHARS + 1), "t.yaml")


def test_yaml_line_still_points_at_fields() -> None:
    assert yaml_line("a: 1\nb:\n  c: 2\n", ["b", "c"]) == 3


def _card(p: Path) -> Any:
    return load_card(p)


def _selection(p: Path) -> Any:
    return load_selection(p)


def _redact(p: Path) -> Any:
    return RedactConfig.load(p)


def _gateway(p: Path) -> Any:
    from calipers.cli._gateway import _file_settings

    return _file_settings(p)


@pytest.mark.parametrize("reader", [_card, _selection, _redact, _gateway])
def test_every_yaml_reader_refuses_the_bomb_naming_its_file(
    tmp_path: Path, reader: Callable[[Path], Any]
) -> None:
    p = tmp_path / "bomb.yaml"
    p.write_text(laughs(10), encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{p}:7: YAML aliases expand it past"):
        reader(p)

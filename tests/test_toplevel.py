"""``import calipers`` exports its names lazily: each one resolves to the object of the module
that defines it, and the ``TYPE_CHECKING`` block (what type checkers and IDEs see) imports
exactly the same names from the same modules, so the two lists cannot drift apart."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import calipers

INIT = Path(calipers.__file__)


def _type_checking_imports() -> dict[str, str]:
    """``{name: module}`` for every import inside ``if TYPE_CHECKING:`` of calipers/__init__."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1, "calipers/__init__.py should have one `if TYPE_CHECKING:` block"
    for stmt in blocks[0].body:
        assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.unparse(stmt)
        for alias in stmt.names:
            found[alias.asname or alias.name] = stmt.module
    return found


def test_every_lazy_name_is_in_the_type_checking_block() -> None:
    lazy = calipers._LAZY
    assert _type_checking_imports() == lazy


def test_all_lists_the_lazy_names_and_the_version() -> None:
    assert set(calipers.__all__) == {*calipers._LAZY, "__version__"}
    assert {"run", "compare", "gate", "select"} <= set(calipers.__all__)


def test_every_lazy_name_resolves_to_its_module_object() -> None:
    for name, module in calipers._LAZY.items():
        assert getattr(calipers, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        calipers.no_such_name  # noqa: B018


def test_sandbox_and_card_errors_are_in_the_one_hierarchy() -> None:
    from calipers import errors
    from calipers.cards import CardError
    from calipers.cards._card import CardError as CardErrorOld
    from calipers.sandbox import SandboxError
    from calipers.sandbox._result import SandboxError as SandboxErrorOld

    assert CardError is CardErrorOld is errors.CardError
    assert SandboxError is SandboxErrorOld is errors.SandboxError
    assert issubclass(CardError, errors.ConfigError)
    assert issubclass(SandboxError, errors.CalipersError)
    assert {"CardError", "SandboxError"} <= set(errors.__all__)
    tree = errors.__doc__ or ""
    assert "└── CardError" in tree and "└── SandboxError" in tree

"""The public API is pinned: the ``__all__`` of ``calipers`` and of every public module under it
(no ``_private`` part in its dotted name) must equal the snapshot in tests/data/public_api.json.

A name added, removed or renamed on purpose: regenerate the snapshot with ::

    python -m tests.test_public_api

and commit the JSON diff with the change, so a reviewer sees the API change.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path

import calipers

SNAPSHOT = Path(__file__).parent / "data" / "public_api.json"
REGENERATE = "python -m tests.test_public_api"


def public_modules() -> list[str]:
    """``calipers`` and every module or package under it with no ``_private`` part."""
    found = ["calipers"]
    for info in pkgutil.walk_packages(calipers.__path__, "calipers."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def current_api() -> dict[str, list[str] | None]:
    """Each public module's ``__all__`` (sorted), or None where it has none."""
    api: dict[str, list[str] | None] = {}
    for name in public_modules():
        names = getattr(importlib.import_module(name), "__all__", None)
        api[name] = None if names is None else sorted(names)
    return api


def _diff(old: dict[str, list[str] | None], new: dict[str, list[str] | None]) -> list[str]:
    lines = []
    for module in sorted(set(old) | set(new)):
        if module not in new:
            lines.append(f"  {module}: module gone")
        elif module not in old:
            lines.append(f"  {module}: new module")
        elif old[module] != new[module]:
            before, after = set(old[module] or ()), set(new[module] or ())
            added = ", ".join(sorted(after - before)) or "-"
            removed = ", ".join(sorted(before - after)) or "-"
            lines.append(f"  {module}: added {added}; removed {removed}")
    return lines


def test_public_api_matches_the_snapshot() -> None:
    pinned = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    now = current_api()
    changes = _diff(pinned, now)
    assert not changes, (
        "The public API differs from tests/data/public_api.json:\n"
        + "\n".join(changes)
        + f"\nIf the change is meant, regenerate the snapshot with `{REGENERATE}` "
        "(from the repository root) and commit it."
    )


def test_every_exported_name_exists() -> None:
    missing = [
        f"{module}.{name}"
        for module, names in current_api().items()
        for name in names or ()
        if not hasattr(importlib.import_module(module), name)
    ]
    assert not missing, f"in __all__ but not defined: {', '.join(missing)}"


def test_the_walk_finds_public_modules_and_skips_private_ones() -> None:
    modules = public_modules()
    assert {"calipers", "calipers.errors", "calipers.stats", "calipers.tasks.dynamic"} <= set(
        modules
    )
    assert not [m for m in modules if "._" in m]


if __name__ == "__main__":
    SNAPSHOT.write_text(json.dumps(current_api(), indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(f"wrote {SNAPSHOT} ({len(current_api())} modules)\n")

"""calipers: LLM evaluation that refuses to print a number it cannot defend.

The Python API mirrors the command line::

    import calipers

    result = calipers.run("fake:echo", "dyn_arithmetic", limit=5)
    result.summary.tasks["dyn_arithmetic"].metrics["acc"]  # an Estimate

Names are imported lazily, so ``import calipers.errors`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calipers._util.environment import calipers_version

if TYPE_CHECKING:  # the same names as _LAZY (a test keeps them equal)
    from calipers.analysis import compare, gate
    from calipers.runner import RunConfig, RunResult, run
    from calipers.selection import select
    from calipers.store import Store
    from calipers.types import Estimate

__version__ = calipers_version()

__all__ = [
    "Estimate",
    "RunConfig",
    "RunResult",
    "Store",
    "__version__",
    "compare",
    "gate",
    "run",
    "select",
]

_LAZY = {
    "Estimate": "calipers.types",
    "RunConfig": "calipers.runner",
    "RunResult": "calipers.runner",
    "Store": "calipers.store",
    "compare": "calipers.analysis",
    "gate": "calipers.analysis",
    "select": "calipers.selection",
    "run": "calipers.runner",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calipers' has no attribute {name!r}")

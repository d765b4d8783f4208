"""A map over a few threads, for work that spends its time outside the GIL: database queries
(SQLite and the PostgreSQL driver release it while they wait) and numpy / scikit-learn
kernels. Results come back in the order of the items; the first exception is raised."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["default_workers", "parallel_map"]

_T = TypeVar("_T")
_R = TypeVar("_R")


def default_workers() -> int:
    """The cores, at least 2 (a database wait overlaps with work even on one core) and at
    most 4 (beyond, threads mostly contend for the GIL)."""
    return max(2, min(4, os.cpu_count() or 1))


def parallel_map(
    fn: Callable[[_T], _R],
    items: Sequence[_T],
    *,
    workers: int | None = None,
    one_blas_thread: bool = False,
) -> list[_R]:
    """``[fn(x) for x in items]`` on up to ``workers`` threads (``default_workers()``).
    ``one_blas_thread``: BLAS and OpenMP pools run one thread each meanwhile, so that the
    map's threads are not multiplied by theirs (the setting is the process's)."""
    n = min(len(items), workers or default_workers())
    if n <= 1:
        return [fn(x) for x in items]
    limits: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
    if one_blas_thread:
        from threadpoolctl import threadpool_limits

        limits = threadpool_limits(1)
    with limits, ThreadPoolExecutor(n, thread_name_prefix="calipers-map") as pool:
        return list(pool.map(fn, items))

"""Running model-written Python in the sandbox: the public entry points."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import threading
import warnings

from calipers.errors import ConfigError
from calipers.sandbox._exec import Isolation, Limits, execute
from calipers.sandbox._probe import detect_isolation
from calipers.sandbox._result import SandboxResult, SandboxWarning

__all__ = ["max_concurrency", "missing_layers", "run_python", "run_python_async"]

_SLOTS = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))


def max_concurrency() -> int:
    """How many sandboxed programs :func:`run_python_async` runs at once (the CPU count)."""
    return max(1, os.cpu_count() or 1)


def missing_layers(iso: Isolation, *, network: bool) -> tuple[str, ...]:
    """Warnings for the layers this isolation lacks (what the program could then do)."""
    out = []
    if not network and "net" not in iso.namespaces:
        out.append(
            "NO NETWORK ISOLATION: could not create a network namespace (unshare --net), so "
            "sandboxed code can open sockets and reach the network and local services."
        )
    if iso.uid is None and "pid" not in iso.namespaces:
        out.append(
            "NO PROCESS ISOLATION: sandboxed code runs as the evaluating user without a PID "
            "namespace, so it can signal (kill) the evaluation process and the user's "
            "other processes."
        )
    if "mount" not in iso.namespaces:
        out.append(
            "NO PRIVATE /tmp: sandboxed code can write into world-writable directories "
            "(/tmp, /var/tmp, /dev/shm) outside its work directory."
        )
    return tuple(out)


def _check(timeout_s: float, cpu_s: int, memory_mb: int, max_processes: int, file_mb: int) -> None:
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ConfigError(f"Sandbox timeout_s must be a positive number, not {timeout_s!r}.")
    for name, v in (
        ("cpu_s", cpu_s),
        ("memory_mb", memory_mb),
        ("max_processes", max_processes),
        ("file_mb", file_mb),
    ):
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"Sandbox {name} must be an integer >= 1, not {v!r}.")


def _setup(
    timeout_s: float,
    cpu_s: int,
    memory_mb: int,
    max_processes: int,
    file_mb: int,
    network: bool,
) -> tuple[Isolation, Limits, tuple[str, ...]]:
    _check(timeout_s, cpu_s, memory_mb, max_processes, file_mb)
    iso = _isolation()
    missing = missing_layers(iso, network=network)
    for msg in missing:
        warnings.warn(msg, SandboxWarning, stacklevel=3)
    limits = Limits(
        timeout_s=timeout_s,
        cpu_s=cpu_s,
        memory_mb=memory_mb,
        max_processes=max_processes,
        file_mb=file_mb,
    )
    return iso, limits, missing


def _execute(
    code: str, iso: Isolation, limits: Limits, network: bool, missing: tuple[str, ...]
) -> SandboxResult:
    with _SLOTS:
        result = execute(code, iso, limits, network=network)
    return dataclasses.replace(result, warnings=missing)


def run_python(
    code: str,
    *,
    timeout_s: float = 10.0,
    cpu_s: int = 10,
    memory_mb: int = 512,
    max_processes: int = 32,
    file_mb: int = 16,
    network: bool = False,
) -> SandboxResult:
    """Run ``code`` as a Python program in the sandbox and wait for it (see docs/sandbox.md).

    Limits: wall clock ``timeout_s``, CPU seconds ``cpu_s``, address space ``memory_mb``,
    processes ``max_processes`` (counted per user, so shared by sandboxes running at once),
    size of each written file ``file_mb``. ``network=True`` keeps the host network. A missing
    isolation layer is a :class:`SandboxWarning` and is listed in ``result.warnings``; a
    sandbox that cannot start at all is a :class:`SandboxError`.
    """
    iso, limits, missing = _setup(timeout_s, cpu_s, memory_mb, max_processes, file_mb, network)
    return _execute(code, iso, limits, network, missing)


async def run_python_async(
    code: str,
    *,
    timeout_s: float = 10.0,
    cpu_s: int = 10,
    memory_mb: int = 512,
    max_processes: int = 32,
    file_mb: int = 16,
    network: bool = False,
) -> SandboxResult:
    """:func:`run_python` in a worker thread; at most :func:`max_concurrency` run at once."""
    iso, limits, missing = await asyncio.to_thread(
        _setup, timeout_s, cpu_s, memory_mb, max_processes, file_mb, network
    )
    return await asyncio.to_thread(_execute, code, iso, limits, network, missing)


def _isolation() -> Isolation:
    return detect_isolation()

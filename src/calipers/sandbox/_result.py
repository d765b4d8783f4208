"""What a sandboxed run reports, and the sandbox's error and warning types."""

from __future__ import annotations

from dataclasses import dataclass

from calipers.errors import SandboxError  # re-exported: it lives in the one error hierarchy

__all__ = ["SandboxError", "SandboxResult", "SandboxWarning"]


class SandboxWarning(RuntimeWarning):
    """An isolation layer is unavailable on this machine (no network namespace, no
    unprivileged user): model-written code runs with less isolation than asked for."""


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one program.

    ``passed`` is exit status 0 within the time limit. ``returncode`` is the program's exit
    status, negative for a signal (``-9``: killed). ``killed_reason`` says why a run was cut
    short: ``timeout`` (wall clock), ``cpu`` (CPU-time limit), ``memory`` (address-space
    limit: a MemoryError), ``file-size``, ``killed`` or ``signal:NAME``; None when the program
    ended on its own. ``stdout`` and ``stderr`` are clipped (head and tail kept).
    ``isolation`` lists the layers applied, ``warnings`` the ones that were asked for but
    missing. For unit tests (:func:`run_tests`), ``tests_completed`` says whether the harness
    saw them return (None for a plain program) and ``tampering`` names what the program did
    to pass without them (``early-exit``, ``trace-hook``, ...; see docs/sandbox.md): either
    makes ``passed`` False.
    """

    passed: bool
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    killed_reason: str | None
    wall_s: float
    isolation: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    tests_completed: bool | None = None
    tampering: tuple[str, ...] = ()

    @property
    def stderr_tail(self) -> str:
        return self.stderr[-1000:]

